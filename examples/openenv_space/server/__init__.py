"""Server of the WebShop OpenEnv Space."""
