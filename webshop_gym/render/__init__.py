"""Observations: text and text_rich from state, HTML from templates, URLs, and the HTML-parsing rule for tests."""
