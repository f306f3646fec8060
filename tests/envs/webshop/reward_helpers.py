"""Shared by the WebShop reward tests (``test_reward_*.py``): the fixtures, the fallback tagger, real titles.

The reward (``envs.webshop.reward``) is a port of WebShop's ``engine/goal.py``. The tests cover
the cases of WebShop's own ``test_goal.py`` / ``test_normalize.py`` that need no spaCy,
the research report's worked examples (1.0 / 0.8 / 0.6 / 0.8 / 0.0), the quirks that change
numbers (rounding before ``> 85``, Latin-1 deletion, tuple options of synthetic goals, the
substring color test, the unlowered goal attribute, the r_type override order), and two golden
fixtures made by the real code (see ``fixtures/make_*_golden.py`` for how to rerun them):

- ``fuzz_golden.json``: 208 pairs scored by the real thefuzz 0.22.1 (``test_reward_matching.py``);
- ``reward_golden.json``: 300 randomized goal/purchase cases scored by the real ``goal.py``
  (spaCy replaced by a LexiconTagger over the stored lexicon), total and verbose info
  (``test_reward_total.py``).
"""

from __future__ import annotations

from pathlib import Path

from envs.webshop.reward import LexiconTagger

FIXTURES = Path(__file__).parent / "fixtures"
FALLBACK = LexiconTagger({})  # every word tagged by guess_pos


# Real WebShop titles under the fallback tagger (spaCy's numbers are in test_reward_type.py's
# spaCy-only test).
SNEAKERS = "Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White"
PEAK = (
    "PEAK High Top Mens Basketball Shoes Lou Williams Streetball Master Breathable Non Slip Outdoor Sneakers"
)
SOUNDBAR = "Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1 Bar 2.1 Channel 4K Ultra HD Soundbar"
BRST = (
    "BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic SC-HT830V DVD/VCR Combo "
    "Home Theater System"
)
KNOB = "Rusticware 921ORB Kitchen and Bath Cabinet Knob"
TWEEZERS = (
    "Minkissy 2pcs Stainless Steel Eyebrow Tweezers Blackhead Acne Remover Portable Makeup Tweezers (Silver)"
)
