"""A batched Hugging Face ``transformers`` policy: one action per env slot from a causal LM.

Needs the optional extra ``pip install 'webshop-gym[hf]'`` (torch and transformers); both are
imported only when a policy is built, so ``import webshop_gym.agents`` stays light.

Decoding is a small loop of its own over the model's forward pass with a KV cache (greedy, or
sampling with temperature / top-k / top-p drawn from a seeded ``torch.Generator``), so runs are
reproducible without touching torch's global RNG.  Prompts are left-padded (with position ids
that skip the padding), so every row continues right after its own prompt.  Generation stops
per row at the end-of-sequence token or the format's closing tag (``</answer>``,
``</action>``), and for all rows at ``max_new_tokens``.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Sequence
from typing import Any

from webshop_gym.agents.batch import unbatch_infos
from webshop_gym.agents.parse import ParsedAction
from webshop_gym.agents.prompts import (
    EpisodeHistory,
    PromptFormat,
    admissible_actions,
    make_prompt,
)
from webshop_gym.error import DependencyNotInstalled

__all__ = ["HFPolicy", "require_torch"]

HF_PIP = "pip install 'webshop-gym[hf]'"


def require_torch():
    """Import and return ``(torch, transformers)`` or raise :class:`DependencyNotInstalled`."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"the Hugging Face policy needs torch and transformers ({exc}); install them with `{HF_PIP}`"
        ) from exc
    return torch, transformers


class HFPolicy:
    """A causal LM acting in a batch of WebShop envs.

    Args:
        model: a ``transformers`` causal LM (``AutoModelForCausalLM``-like: ``model(input_ids,
            attention_mask, past_key_values, use_cache)`` returning ``logits`` and
            ``past_key_values``).
        tokenizer: its tokenizer (a pad token is set to the EOS token when missing).
        prompt: a prompt format or its name (default ``think-answer``).
        max_new_tokens: tokens generated per step at most.
        do_sample: sample instead of greedy decoding.
        temperature, top_k, top_p: sampling parameters (``top_k=0`` / ``top_p=1.0``: off).
        seed: seed of the sampling generator.
        device: ``"cuda"``, ``"cpu"``, ... (default: CUDA when available, else CPU); the model is
            moved there unless it was dispatched with a ``device_map``.
        closest: map an inadmissible answer to the closest admissible action.
        chat: render prompts with the tokenizer's chat template (default: when it has one).
        max_prompt_tokens: keep only the last N prompt tokens (left truncation).
        batch_size: prompts per forward batch (default: all at once).

    Example:
        >>> policy = HFPolicy.from_pretrained("path/to/local/model")  # doctest: +SKIP
        >>> actions = policy.act_batch(observations, infos)  # doctest: +SKIP
    """

    name = "hf"

    def __init__(
        self,
        model,
        tokenizer,
        prompt: str | PromptFormat = "think-answer",
        max_new_tokens: int = 128,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int = 0,
        device: str | None = None,
        closest: bool = False,
        chat: bool | None = None,
        max_prompt_tokens: int | None = None,
        batch_size: int | None = None,
    ):
        torch, _ = require_torch()
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if do_sample and temperature <= 0:
            raise ValueError(f"temperature must be > 0 when sampling, got {temperature}")
        self.torch = torch
        self.model = model
        self.tokenizer = tokenizer
        self.prompt = make_prompt(prompt)
        self.max_new_tokens = int(max_new_tokens)
        self.do_sample = bool(do_sample)
        self.temperature = float(temperature)
        self.top_k = int(top_k)
        self.top_p = float(top_p)
        self.closest = bool(closest)
        self.max_prompt_tokens = max_prompt_tokens
        self.batch_size = batch_size
        if getattr(model, "hf_device_map", None):
            self.device = torch.device(device) if device else next(model.parameters()).device
        else:
            self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
            self.model.to(self.device)
        self.model.eval()
        if tokenizer.pad_token is None:
            if tokenizer.eos_token is None:
                raise ValueError("the tokenizer has neither a pad token nor an EOS token to pad with")
            tokenizer.pad_token = tokenizer.eos_token
        self.chat = bool(getattr(tokenizer, "chat_template", None)) if chat is None else bool(chat)
        params = inspect.signature(model.forward).parameters
        self._positions = "position_ids" in params
        # transformers renamed ``past_key_values`` to ``cache`` (5.x); speak whichever it takes.
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keep_logits = "logits_to_keep" in params
        self.seed = int(seed)
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self.history = EpisodeHistory(1)
        self.last: list[ParsedAction | None] = []
        self.last_responses: list[str | None] = []
        self.last_prompts: list[str | None] = []

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, dtype: str | None = "auto", trust_remote_code: bool = False,
                        **kwargs: Any) -> HFPolicy:
        """Load a model and tokenizer from a local directory (never downloads anything).

        Args:
            path: a directory saved with ``save_pretrained``.
            dtype: ``"auto"``, ``"float16"``, ``"bfloat16"``, ``"float32"`` or None.
            trust_remote_code: passed to ``from_pretrained``.
            **kwargs: :class:`HFPolicy` arguments.
        """
        torch, transformers = require_torch()
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"no model directory at {path!r} (hf:PATH needs a local folder; nothing is downloaded)")
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True, trust_remote_code=trust_remote_code)
        load: dict[str, Any] = {"local_files_only": True, "trust_remote_code": trust_remote_code}
        if dtype is not None:
            value = dtype if dtype == "auto" else getattr(torch, dtype)
            major_minor = tuple(int(x) for x in transformers.__version__.split(".")[:2])
            load["dtype" if major_minor >= (4, 56) else "torch_dtype"] = value
        model = transformers.AutoModelForCausalLM.from_pretrained(path, **load)
        return cls(model, tokenizer, **kwargs)

    # -- the Policy protocol (one slot) ------------------------------------------------------------

    @property
    def decoding(self) -> dict:
        """The decoding it plays, as a run records it (``evaluate`` of this object checks it against the protocol's)."""
        return {"do_sample": self.do_sample, "temperature": self.temperature if self.do_sample else None,
                "top_p": self.top_p if self.do_sample else None, "max_new_tokens": self.max_new_tokens}

    def reset(self, info: dict[str, Any] | None = None) -> None:
        """Start a new episode in slot 0 (single-env use)."""
        self.history.reset(0)

    def act(self, obs: str, info: dict[str, Any]) -> str:
        """Return the action for one env (slot 0)."""
        return self.act_batch([obs], [info])[0]

    # -- batches -----------------------------------------------------------------------------

    def render(self, obs: str, info: dict[str, Any], history=()) -> str:
        """The prompt text the model sees for one slot."""
        if self.chat:
            messages = self.prompt.messages(obs, info, history)
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self.prompt.build(obs, info, history)

    def act_batch(self, observations: Sequence[str], infos) -> list[str]:
        """One action per slot (``""`` for idle slots).

        ``infos`` is the vector env's batched info dict or a list of per-slot dicts.  A slot whose
        ``info["steps"] == 0`` starts a new episode (its history is cleared).  After the call,
        :attr:`last` holds each slot's :class:`~webshop_gym.agents.parse.ParsedAction` and
        :attr:`last_responses` the raw answers.
        """
        n = len(observations)
        infos = unbatch_infos(infos, n)
        self.history.observe(infos)
        active = [i for i, info in enumerate(infos) if not info.get("idle") and "instruction" in info]
        prompts = [self.render(observations[i], infos[i], self.history[i]) for i in active]
        texts = self.generate(prompts) if prompts else []
        actions = [""] * n
        self.last = [None] * n
        self.last_responses = [None] * n
        self.last_prompts = [None] * n
        for i, prompt, text in zip(active, prompts, texts, strict=True):
            admissible = admissible_actions(infos[i])
            parsed = self.prompt.parse_detailed(text, admissible, self.closest)
            actions[i] = parsed.action
            self.last[i], self.last_responses[i], self.last_prompts[i] = parsed, text, prompt
            self.history.record(i, observations[i], parsed.action, text, admissible)
        return actions

    # -- decoding ----------------------------------------------------------------------------

    def encode(self, prompts: Sequence[str]):
        """Tokenize with left padding (and left truncation to ``max_prompt_tokens``)."""
        tok = self.tokenizer
        saved = tok.padding_side, getattr(tok, "truncation_side", "right")
        tok.padding_side, tok.truncation_side = "left", "left"
        try:
            kwargs: dict[str, Any] = {"return_tensors": "pt", "padding": True}
            if self.max_prompt_tokens is not None:
                kwargs.update(truncation=True, max_length=int(self.max_prompt_tokens))
            if self.chat:
                kwargs["add_special_tokens"] = False  # the chat template wrote them
            return tok(list(prompts), **kwargs)
        finally:
            tok.padding_side, tok.truncation_side = saved

    def generate(self, prompts: Sequence[str]) -> list[str]:
        """Complete every prompt; return the new text of each (cut after a stop string)."""
        size = self.batch_size or len(prompts)
        out: list[str] = []
        for start in range(0, len(prompts), size):
            out += self._generate(prompts[start : start + size])
        return out

    def _next_tokens(self, logits):
        torch = self.torch
        if not self.do_sample:
            return logits.argmax(dim=-1)
        logits = logits / self.temperature
        if self.top_k > 0:
            kth = torch.topk(logits, min(self.top_k, logits.shape[-1]), dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if self.top_p < 1.0:
            sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
            probs = torch.softmax(sorted_logits, dim=-1)
            drop = probs.cumsum(dim=-1) - probs > self.top_p
            sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
            logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
        probs = torch.softmax(logits, dim=-1)
        return torch.multinomial(probs, 1, generator=self.generator).squeeze(-1)

    def _generate(self, prompts: Sequence[str]) -> list[str]:
        torch = self.torch
        tok = self.tokenizer
        enc = self.encode(prompts)
        input_ids = enc["input_ids"].to(self.device)
        attention = enc["attention_mask"].to(self.device)
        batch = input_ids.shape[0]
        eos = getattr(self.model.generation_config, "eos_token_id", None) if hasattr(self.model, "generation_config") else None
        eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos] if eos is not None else [])
        if tok.eos_token_id is not None:
            eos_ids.add(int(tok.eos_token_id))
        eos_tensor = torch.tensor(sorted(eos_ids), device=self.device, dtype=torch.long) if eos_ids else None
        pad = int(tok.pad_token_id)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        finished = torch.zeros(batch, dtype=torch.bool, device=self.device)
        tokens: list[list[int]] = [[] for _ in range(batch)]
        stops = _stop_patterns(self.prompt.stop)
        past = None
        current, current_pos = input_ids, positions
        with torch.inference_mode():
            for _ in range(self.max_new_tokens):
                kwargs: dict[str, Any] = {"input_ids": current, "attention_mask": attention, "use_cache": True}
                if past is not None:
                    kwargs[self._cache_arg] = past
                if self._positions:
                    kwargs["position_ids"] = current_pos
                if self._keep_logits:
                    kwargs["logits_to_keep"] = 1
                output = self.model(**kwargs)
                past = output[self._cache_arg] if self._cache_arg in output else output.past_key_values
                logits = output.logits[:, -1, :].float()
                chosen = self._next_tokens(logits)
                chosen = torch.where(finished, torch.full_like(chosen, pad), chosen)
                if eos_tensor is not None:
                    hit_eos = torch.isin(chosen, eos_tensor) & ~finished
                else:
                    hit_eos = torch.zeros_like(finished)
                values = chosen.tolist()
                done_now = hit_eos.tolist()
                was_done = finished.tolist()
                for row in range(batch):
                    if was_done[row] or done_now[row]:
                        continue
                    tokens[row].append(values[row])
                    if stops:  # a stop string appears in the last tokens (it never did before)
                        tail = tok.decode(tokens[row][-16:], skip_special_tokens=True)
                        done_now[row] = any(s.search(tail) for s in stops)
                finished = finished | torch.tensor(done_now, device=self.device)
                if bool(finished.all()):
                    break
                current = chosen[:, None]
                current_pos = current_pos[:, -1:] + 1
                attention = torch.cat([attention, torch.ones((batch, 1), dtype=attention.dtype, device=self.device)], dim=1)
        texts = []
        for row in range(batch):
            text = tok.decode(tokens[row], skip_special_tokens=True)
            ends = [m.end() for m in (s.search(text) for s in stops) if m]
            texts.append(text[: min(ends)] if ends else text)
        return texts


def _stop_patterns(stops: Sequence[str]) -> list[re.Pattern]:
    """Stop strings as patterns; a closing tag also matches ``</ answer >`` and other cases."""
    out = []
    for stop in stops:
        tag = re.fullmatch(r"</\s*(\w+)\s*>", stop)
        out.append(re.compile(rf"<\s*/\s*{tag.group(1)}\s*>", re.IGNORECASE) if tag else re.compile(re.escape(stop)))
    return out
