"""WebShop's product search: BM25 over one document per product, scored the way the real engine scores.

The real WebShop (``search_engine/convert_product_file_format.py`` + ``web_agent_site/engine/engine.py``)
indexes one document per product with pyserini 0.17 (Anserini on Lucene 8.3) and answers
``LuceneSearcher.search(" ".join(keywords), k=50)``. This module reproduces that stack in numpy:

What matches Lucene (ported from its source; the tests check the arithmetic by hand and by brute force):

- the document recipe (:func:`document_text`);
- Anserini's ``DefaultEnglishAnalyzer`` after tokenisation: ``EnglishPossessiveFilter`` (trailing
  ``'s``), lowercase, Lucene's 33 English stopwords, then ``PorterStemFilter``. The stemmer is a
  port of Lucene's ``PorterStemmer`` (Porter's C release 3). PyStemmer's ``"porter"`` is *not*
  the same: it stems 1-2 letter words (``xs`` -> ``x``, ``s`` -> empty) and lacks the C version's
  ``-bli -> -ble`` and ``-logi -> -log`` rules (``possibly``, ``technology``); ``"english"`` is
  Porter2, further off;
- BM25 as Lucene 8.3's ``BM25Similarity(k1=0.9, b=0.4)`` computes it, float32 for float32:
  ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` and ``tf / (tf + k1 * (1 - b + b * dl / avgdl))``,
  *including* the lossy one-byte norm (``SmallFloat.intToByte4``): document lengths above 39
  tokens are rounded down to 4 significant bits (100 tokens count as 96). N and avgdl count only
  documents with at least one indexed token, as Lucene's ``docCount`` does. A query term repeated
  r times weighs r times (Lucene rewrites duplicate SHOULD clauses into a boost);
- the hit list: documents matching at least one query term (every such score is > 0; a document
  with none is not a hit), best first, ties broken by asin ascending (Anserini's
  ``BREAK_SCORE_TIES_BY_DOCID`` sorts by score, then by the ``id`` field, which is the asin).

What cannot match bit for bit:

- tokenisation. Lucene's ``StandardTokenizer`` implements Unicode's word-break rules (UAX #29);
  :data:`TOKEN_PATTERN` covers the rules that occur in product text (letters and digits join,
  ``3.5``, ``1,000``, ``men's``, ``e.g``, ``a_b`` stay one token, ``x-large`` splits, tokens
  are cut at 255 characters) but not the per-character segmentation of CJK ideographs and
  Hiragana, emoji tokens, or format/combining characters inside words;
- the last bit of a score, rarely: ``Math.log`` and numpy's ``log`` may differ in the last bit of
  a double (it seldom survives the cast to float32), and a query term repeated 3+ times is summed
  here as one boosted clause. Lucene >= 8.4 (LUCENE-9071) also rewrote BM25's float arithmetic;
  pyserini 0.17 ships Anserini on Lucene 8.3, whose arithmetic this follows.

Not reproduced on purpose: the engine's debug prefixes ``<r>``, ``<a>``, ``<c>``, ``<q>``; here
they are plain text (``"<r> shoes"`` searches for the words ``r`` and ``shoes``).

Why not ``bm25s``: its ``method="lucene"`` formula is Lucene's (a test checks the two agree where
lengths are exact), but it takes the exact document length from the token list, so it cannot apply
Lucene's lossy norm, which shortens long documents by up to 1/16 and so reorders results; its
float order differs too, and its default tokenizer drops one-letter tokens (``x`` of ``x-large``).
The index here is a term-major sparse matrix of precomputed ``tf / (tf + norm)`` values, so a
query costs one vectorised add per query term.
"""

from __future__ import annotations

import functools
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np

__all__ = [
    "K1",
    "B",
    "SEARCH_RETURN_N",
    "STOPWORDS",
    "TOKEN_PATTERN",
    "SearchIndex",
    "analyze",
    "document_text",
    "lucene_norm_length",
    "porter_stem",
]

K1 = 0.9  # Anserini's BM25 defaults (pyserini LuceneSearcher)
B = 0.4
SEARCH_RETURN_N = 50  # web_agent_site/engine/engine.py
MAX_TOKEN_LENGTH = 255  # StandardTokenizer cuts longer tokens into pieces of this length

# org.apache.lucene.analysis.en.EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (33 words).
STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)

# UAX #29 word-break classes: these join two letters (MidLetter, MidNumLet, Single_Quote) or two
# digits (MidNum, MidNumLet, Single_Quote) into one token; "_" (ExtendNumLet) is inside \w.
_MID_LETTER = "[:.'\u00b7\u0387\u05f4\u2018\u2019\u2024\u2027\ufe13\ufe52\ufe55\uff07\uff0e\uff1a]"
_MID_NUM = "[,;.'\u037e\u0589\u060c\u060d\u066c\u07f8\u2018\u2019\u2024\u2044\ufe10\ufe14\ufe50\ufe52\ufe54\uff07\uff0c\uff0e\uff1b]"  # noqa: E501
TOKEN_PATTERN = re.compile(rf"\w+(?:(?:(?<=[^\W\d_]){_MID_LETTER}(?=[^\W\d_])|(?<=\d){_MID_NUM}(?=\d))\w+)*")
# A looser pattern (any mid character between two word characters) is cheaper and never splits
# where TOKEN_PATTERN joins; its runs are split by TOKEN_PATTERN once per distinct run (cached).
_CANDIDATE = re.compile(rf"\w+(?:[{_MID_LETTER[1:-1]}{_MID_NUM[1:-1]}]\w+)*")
_POSSESSIVE = ("'s", "\u2019s", "\uff07s")


def document_text(product: Mapping[str, Any]) -> str:
    """The indexed text of one product, as ``convert_product_file_format.py`` builds it.

    The converter reads the *loaded* product (``engine.load_products`` output), not the raw
    scrape: ``Title`` (raw ``name``), ``Description`` (raw ``full_description``),
    ``BulletPoints[0]`` (first of raw ``small_description``) and ``options`` (raw
    ``customization_options``, names and values lowercased, ``/`` in values -> ``" | "``), as
    ``"name: v1, v2, and name2: w1"``, all joined by spaces and lowercased. Where the real code
    would crash (no bullet points, a ``None`` field) this takes the empty string.
    """
    options = product.get("options") or {}
    option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in options.items())
    bullets = product.get("BulletPoints") or [""]
    if isinstance(bullets, str):
        bullets = [bullets]
    return " ".join(
        [product.get("Title") or "", product.get("Description") or "", bullets[0] or "", option_text]
    ).lower()


def analyze(text: str) -> list[str]:
    """Index terms of ``text``: Anserini's DefaultEnglishAnalyzer (see the module docstring)."""
    return [term for run in _CANDIDATE.findall(text.lower()) for term in _run_terms(run)]


@functools.lru_cache(maxsize=1 << 16)
def _run_terms(run: str) -> tuple[str, ...]:
    """The index terms of one lowercased ``_CANDIDATE`` run (usually one token, one term)."""
    terms = []
    for token in TOKEN_PATTERN.findall(run):
        for start in range(0, len(token), MAX_TOKEN_LENGTH):
            piece = token[start : start + MAX_TOKEN_LENGTH]
            if piece.endswith(_POSSESSIVE):  # EnglishPossessiveFilter
                piece = piece[:-2]
            if piece in STOPWORDS or not piece.strip("_"):  # a run of "_" alone is no UAX #29 word
                continue
            terms.append(porter_stem(piece))
    return tuple(terms)


def lucene_norm_length(length: int) -> int:
    """The document length Lucene 8 scores with: ``byte4ToInt(intToByte4(length))``.

    Lengths below 24 are stored exactly; above, ``length - 24`` keeps its 4 leading bits, so the
    value is rounded down (exact up to 39, then 40, 40, 42, 42, ..., 100 -> 96).
    """
    if length < 24:
        return length
    rest = length - 24
    shift = max(rest.bit_length() - 4, 0)
    return 24 + ((rest >> shift) << shift)


class _PorterStemmer:
    """Lucene's ``org.apache.lucene.analysis.en.PorterStemmer``, step for step.

    That is Martin Porter's ANSI C/Java release 3, which departs from the 1980 paper (and from
    Snowball's "porter") in two rules, ``-bli -> -ble`` and ``-logi -> -log``, and leaves words of
    one or two letters alone. Indices and names follow the Java source so the two can be compared.
    """

    __slots__ = ("b", "j", "k")

    def stem(self, word: str) -> str:
        self.b = list(word)
        self.k = len(word) - 1
        self.j = 0
        if self.k > 1:
            self.step1()
            self.step2()
            self.step3()
            self.step4()
            self.step5()
            self.step6()
        return "".join(self.b[: self.k + 1])

    def cons(self, i: int) -> bool:
        ch = self.b[i]
        if ch in "aeiou":
            return False
        if ch == "y":
            return True if i == 0 else not self.cons(i - 1)
        return True

    def m(self) -> int:
        """The number of consonant-vowel sequences in b[0..j]."""
        n, i, j = 0, 0, self.j
        while True:
            if i > j:
                return n
            if not self.cons(i):
                break
            i += 1
        i += 1
        while True:
            while True:
                if i > j:
                    return n
                if self.cons(i):
                    break
                i += 1
            i += 1
            n += 1
            while True:
                if i > j:
                    return n
                if not self.cons(i):
                    break
                i += 1
            i += 1

    def vowelinstem(self) -> bool:
        return any(not self.cons(i) for i in range(self.j + 1))

    def doublec(self, j: int) -> bool:
        return j >= 1 and self.b[j] == self.b[j - 1] and self.cons(j)

    def cvc(self, i: int) -> bool:
        if i < 2 or not self.cons(i) or self.cons(i - 1) or not self.cons(i - 2):
            return False
        return self.b[i] not in "wxy"

    def ends(self, s: str) -> bool:
        o = self.k - len(s) + 1
        if o < 0 or "".join(self.b[o : self.k + 1]) != s:
            return False
        self.j = self.k - len(s)
        return True

    def setto(self, s: str) -> None:
        o = self.j + 1
        self.b[o : o + len(s)] = s
        self.k = self.j + len(s)

    def r(self, s: str) -> None:
        if self.m() > 0:
            self.setto(s)

    def step1(self) -> None:  # plurals, -ed, -ing
        if self.b[self.k] == "s":
            if self.ends("sses"):
                self.k -= 2
            elif self.ends("ies"):
                self.setto("i")
            elif self.b[self.k - 1] != "s":
                self.k -= 1
        if self.ends("eed"):
            if self.m() > 0:
                self.k -= 1
        elif (self.ends("ed") or self.ends("ing")) and self.vowelinstem():
            self.k = self.j
            if self.ends("at"):
                self.setto("ate")
            elif self.ends("bl"):
                self.setto("ble")
            elif self.ends("iz"):
                self.setto("ize")
            elif self.doublec(self.k):
                ch = self.b[self.k]
                self.k -= 1
                if ch in "lsz":
                    self.k += 1
            elif self.m() == 1 and self.cvc(self.k):
                self.setto("e")

    def step2(self) -> None:  # terminal y -> i
        if self.ends("y") and self.vowelinstem():
            self.b[self.k] = "i"

    _STEP3 = {
        "a": (("ational", "ate"), ("tional", "tion")),
        "c": (("enci", "ence"), ("anci", "ance")),
        "e": (("izer", "ize"),),
        "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
        "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
        "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
        "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
        "g": (("logi", "log"),),
    }
    _STEP4 = {
        "e": (("icate", "ic"), ("ative", ""), ("alize", "al")),
        "i": (("iciti", "ic"),),
        "l": (("ical", "ic"), ("ful", "")),
        "s": (("ness", ""),),
    }
    _STEP5 = {
        "a": ("al",),
        "c": ("ance", "ence"),
        "e": ("er",),
        "i": ("ic",),
        "l": ("able", "ible"),
        "n": ("ant", "ement", "ment", "ent"),
        "s": ("ism",),
        "t": ("ate", "iti"),
        "u": ("ous",),
        "v": ("ive",),
        "z": ("ize",),
    }

    def _replace_first(self, rules: tuple[tuple[str, str], ...]) -> None:
        for suffix, replacement in rules:
            if self.ends(suffix):
                self.r(replacement)
                return

    def step3(self) -> None:  # double suffixes: -ization -> -ize, ...
        if self.k == 0:
            return
        self._replace_first(self._STEP3.get(self.b[self.k - 1], ()))

    def step4(self) -> None:  # -ic-, -full, -ness, ...
        self._replace_first(self._STEP4.get(self.b[self.k], ()))

    def step5(self) -> None:  # -ant, -ence, ... in context <c>vcvc<v>
        if self.k == 0:
            return
        ch = self.b[self.k - 1]
        if ch == "o":
            found = (self.ends("ion") and self.j >= 0 and self.b[self.j] in "st") or self.ends("ou")
        else:
            found = any(self.ends(suffix) for suffix in self._STEP5.get(ch, ()))
        if found and self.m() > 1:
            self.k = self.j

    def step6(self) -> None:  # final -e, -ll
        self.j = self.k
        if self.b[self.k] == "e":
            a = self.m()
            if a > 1 or (a == 1 and not self.cvc(self.k - 1)):
                self.k -= 1
        if self.b[self.k] == "l" and self.doublec(self.k) and self.m() > 1:
            self.k -= 1


def porter_stem(word: str) -> str:
    """Lucene's PorterStemFilter on one lowercased token (see :class:`_PorterStemmer`)."""
    return _PorterStemmer().stem(word)


_F32 = np.float32


class SearchIndex:
    """An immutable BM25 index over a catalog; ``search`` answers like WebShop's LuceneSearcher.

    Built from product dicts in WebShop's loaded shape (indexed with :func:`document_text`) or from
    ``(asin, text)`` pairs. Asins must be unique (``engine.load_products`` drops duplicates).
    Build it over exactly the products the env serves: idf and avgdl depend on the whole set (the
    real engine searches its index, then drops hits that are not in the loaded catalog).
    The index is never modified after construction, so copies share it (see ``__deepcopy__``).
    """

    def __init__(self, items: Iterable[Mapping[str, Any] | tuple[str, str]]):
        asins: list[str] = []
        vocab: dict[str, int] = {}
        memo: dict[str, tuple[int, ...]] = {}  # _CANDIDATE run -> its term ids
        keys: list[np.ndarray] = []  # per chunk of documents: doc << 32 | term, sorted
        tfs: list[np.ndarray] = []  # and the term's frequency in the document
        lengths: list[np.ndarray] = []
        run_ids, run_counts = array("i"), array("i")  # the current chunk, flat

        def flush() -> None:
            """Count (doc, term) pairs of the chunk in numpy, which is much faster than per-doc Counters."""
            chunk_start = len(asins) - len(run_counts)
            docs = np.repeat(np.arange(chunk_start, len(asins), dtype=np.int64), run_counts)
            chunk_keys, tf = np.unique(
                (docs << 32) | np.frombuffer(run_ids, dtype=np.int32), return_counts=True
            )
            keys.append(chunk_keys)
            tfs.append(tf.astype(np.int32))
            lengths.append(np.bincount(docs - chunk_start, minlength=len(run_counts)))
            del run_ids[:], run_counts[:]

        for item in items:
            if isinstance(item, Mapping):
                asin, text = item["asin"], document_text(item)
            else:
                asin, text = item
            asins.append(str(asin))
            runs = _CANDIDATE.findall(text.lower())
            for run in set(runs).difference(memo):
                memo[run] = tuple(vocab.setdefault(term, len(vocab)) for term in _run_terms(run))
            before = len(run_ids)
            run_ids.extend(chain.from_iterable(map(memo.__getitem__, runs)))
            run_counts.append(len(run_ids) - before)
            if len(run_counts) == 4096:
                flush()
        flush()
        if len(set(asins)) != len(asins):
            raise ValueError("SearchIndex needs unique asins")

        n_docs = len(asins)
        self.asins: tuple[str, ...] = tuple(asins)
        self._vocab = vocab
        key = np.concatenate(keys)
        del keys[:]
        terms, docs = (key & 0xFFFFFFFF).astype(np.int32), (key >> 32).astype(np.int32)
        del key
        order = np.argsort(terms, kind="stable")  # term-major; documents stay ascending within a term
        df = np.bincount(terms, minlength=len(vocab))
        self._indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        self._docs = docs[order]
        tf = np.concatenate(tfs)[order]
        del terms, docs, order, tfs[:]

        # Lucene 8.3 BM25Similarity, in its float/double arithmetic.
        length_arr = np.concatenate(lengths)
        doc_count = int(np.count_nonzero(length_arr))  # Lucene's docCount: docs with the field
        avgdl = _F32(length_arr.sum() / doc_count) if doc_count else _F32(1)
        idf = np.log(1 + (doc_count - df + 0.5) / (df + 0.5))  # Math.log in double, then (float)
        self._idf = idf.astype(np.float32)
        norm_len = np.array([lucene_norm_length(int(x)) for x in length_arr], dtype=np.float32)
        norm = _F32(K1) * ((_F32(1) - _F32(B)) + _F32(B) * norm_len / avgdl)  # cache[] in float32
        self._tfn = np.empty(tf.size, dtype=np.float32)
        for lo in range(0, tf.size, 1 << 20):  # freq / (freq + norm) in double, then (float)
            freq = tf[lo : lo + (1 << 20)].astype(np.float64)
            self._tfn[lo : lo + (1 << 20)] = freq / (freq + norm[self._docs[lo : lo + (1 << 20)]])
        self._avgdl = float(avgdl)
        self._doc_count = doc_count
        # Tie-break key: the rank of each asin in sorted order.
        self._asin_rank = np.empty(n_docs, dtype=np.int64)
        self._asin_rank[np.argsort(np.array(asins, dtype=str), kind="stable")] = np.arange(n_docs)
        for arr in (self._indptr, self._docs, self._idf, self._tfn, self._asin_rank):
            arr.setflags(write=False)

    def __len__(self) -> int:
        return len(self.asins)

    def __repr__(self) -> str:
        return f"SearchIndex({len(self)} docs, {len(self._vocab)} terms, avgdl={self._avgdl:.2f})"

    def __deepcopy__(self, memo: dict) -> SearchIndex:
        # The index is immutable (read-only arrays, never mutated after __init__) and can be
        # 100s of MB; envs are deep-copied often (clones, GiGPO anchors), and they must share it.
        return self

    def _accumulate(self, query: str | Sequence[str]) -> np.ndarray:
        if not isinstance(query, str):
            query = " ".join(query)  # the engine joins its keyword list with spaces
        counts = Counter(analyze(query))
        scores = np.zeros(len(self.asins), dtype=np.float64)
        for term, repeat in counts.items():
            t = self._vocab.get(term)
            if t is None:
                continue
            lo, hi = self._indptr[t], self._indptr[t + 1]
            weight = _F32(repeat) * self._idf[t]  # BoostQuery(TermQuery, repeat): boost * idf
            scores[self._docs[lo:hi]] += weight * self._tfn[lo:hi]  # float32 product, double sum
        return scores

    def scores(self, query: str | Sequence[str]) -> np.ndarray:
        """BM25 score of every document (index order), as Lucene's float32; 0 for non-matches."""
        return self._accumulate(query).astype(np.float32)

    def search(self, query: str | Sequence[str], k: int = SEARCH_RETURN_N) -> list[str]:
        """Asins of the best ``k`` matching documents, best first, ties by asin ascending.

        Never raises on text: an empty, stopword-only or unknown-word query returns ``[]``.
        """
        acc = self._accumulate(query)
        hits = np.flatnonzero(acc)
        if k <= 0 or hits.size == 0:
            return []
        scores = acc[hits].astype(np.float32)
        if hits.size > k:  # keep the k best and everything tied with the k-th, then sort those
            kth = np.partition(scores, hits.size - k)[hits.size - k]
            keep = scores >= kth
            hits, scores = hits[keep], scores[keep]
        order = np.lexsort((self._asin_rank[hits], -scores))[:k]
        return [self.asins[i] for i in hits[order]]
