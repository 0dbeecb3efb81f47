"""Fixtures for the torch-dependent adapter tests: a tiny tokenizer and a tiny random causal LM,
both built locally (nothing is downloaded)."""

from __future__ import annotations

import pytest

TORCH_REASON = "torch/transformers are not installed (pip install 'webshop-gym[hf]' to run the HF adapter tests)"


def _require_hf():
    try:
        import tokenizers  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        pytest.skip(TORCH_REASON)


@pytest.fixture(scope="session")
def hf_stack():
    """(torch, transformers), or skip.  Torch runs on one thread here: the models are tiny, and
    intra-op threads only contend with the test processes on a small CI machine."""
    _require_hf()
    import torch
    import transformers

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch, transformers
    torch.set_num_threads(threads)


def _corpus(shop) -> list[str]:
    texts = [
        "<think> </think> <answer> </answer> <action> </action> Thought : Action : click [ ] search [ ] red soap",
        "buy now back to search next > < prev description features reviews Instruction : Observation :",
        "Admissible actions : WebShop [SEP] Search Page Total results Price Rating N.A.",
    ]
    texts += list(shop.goals.instruction[:200])
    texts += list(shop.catalog.title[:200])
    return texts


@pytest.fixture(scope="session")
def tiny_tokenizer(hf_stack, default_shop):
    """A word-level tokenizer trained on a few hundred shop strings, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    raw.train_from_iterator(_corpus(default_shop), trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[EOS]"]))
    return PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")


@pytest.fixture(scope="session")
def make_tiny_model(hf_stack, tiny_tokenizer):
    """Build a fresh tiny GPT-2 with random weights (seeded)."""
    torch, transformers = hf_stack

    def make(seed: int = 0):
        config = transformers.GPT2Config(
            vocab_size=len(tiny_tokenizer), n_positions=512, n_embd=32, n_layer=2, n_head=2,
            bos_token_id=tiny_tokenizer.eos_token_id, eos_token_id=tiny_tokenizer.eos_token_id,
            pad_token_id=tiny_tokenizer.pad_token_id,
        )
        generator_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            model = transformers.GPT2LMHeadModel(config)
        finally:
            torch.random.set_rng_state(generator_state)
        return model.eval()

    return make
