"""Mini Hanabi (``mini_hanabi-v0``): cooperative, imperfect information, through OpenSpiel.

Needs the optional extra ``pip install 'teamgym[spiel]'`` (``envs.games.spiel``).

Rules
    OpenSpiel's Hanabi with 2 colours (R, Y) x 3 ranks (three 1s, two 2s, one 3 per colour),
    hands of 2 cards, 3 information tokens and 1 life: the two players build each colour's
    firework 1, 2, 3 in order. A player sees the other's cards, not its own; on its turn it
    plays a card (the next of its colour: the firework grows; otherwise a bomb, which with
    one life ends the game with score 0), discards one (regains an information token) or
    spends a token to tell the other all its cards of one colour or rank. Maximum score 6.
Roles and seats
    ``first_0`` (player 0) and ``second_0`` (player 1); self-play is one shared policy.
Task
    The seed deals the deck (the starting hands are split between train and test).
Observation
    A short rules text, then OpenSpiel's observation: life and information tokens, the
    fireworks, the hands (own cards as ``XX``; after ``||`` what the player knows of each
    card: known colour and rank, then the colours and ranks still possible), deck size and
    discards; the numbered legal moves.
Rewards
    ``team/score``: each card played adds 1 for both; a bomb takes the score back to 0.
Invalid actions
    ``local/invalid``; under ``"penalize"`` the reply gives a hint if it can (the cheapest
    harmless move), else discards (``_forced_move``), never plays a card.
Scripted partner
    ``heuristic``, a cautious rule bot: play a card whose every possible identity is
    playable; else hint the partner's playable card (its rank, else its colour); else
    discard the first card; else any hint (it never plays a card blind). No exact oracle.
Success
    The game ended with a positive score (at least one card played, no bomb). A team that
    only hints and discards never bombs but scores 0: not a success.

Versions: v0, this page.
"""

from __future__ import annotations

import re
from typing import ClassVar

from envs.core import StepOutcome, TrainingPreset
from envs.games.spiel import SpielEnv

__all__ = ["MiniHanabiEnv"]

_CARD = re.compile(r"^(\S\S) \|\| (\S)(\S)\|([A-Z]*)(\d*)$")


class MiniHanabiEnv(SpielEnv):
    """Two-colour, three-rank Hanabi for two players (see the module docstring)."""

    metadata: ClassVar[dict] = {**SpielEnv.metadata, "name": "mini_hanabi_v0"}
    GAME: ClassVar[str] = "hanabi"
    PARAMS: ClassVar[dict] = {
        "players": 2,
        "colors": 2,
        "ranks": 3,
        "hand_size": 2,
        "max_information_tokens": 3,
        "max_life_tokens": 1,
    }
    DEFAULT_MAX_CYCLES: ClassVar[int] = 20
    # Cooperative, but with no oracle term to shape tree groups: episode-level groups of the shared
    # score, with a baseline per seat (the seats' openings differ), as the zero-sum games train.
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=16, max_cycles=None, policy="shared", algo="spiral"
    )
    INTRO: ClassVar[str] = (
        "Hanabi, cooperative. Build each colour's firework 1, 2, 3 in order with your partner; "
        "you see your partner's cards, not yours. Playing a card that does not fit is a bomb: the "
        "game ends with score 0. Hints cost an information token; discarding regains one. Cards are "
        "colour and rank (R1 = red 1); yours show as XX, and after || is what you know of a card."
    )

    def _act(self, agent: str, text: str) -> StepOutcome:
        outcome = super()._act(agent, text)
        if outcome.terminated:
            outcome.success = self.score() > 0 and not self.bombed()
        return outcome

    def bombed(self) -> bool:
        """Every life is lost (OpenSpiel's Python state has no life-token accessor; its text does)."""
        return "Life tokens: 0" in str(self.state)

    def score(self) -> int:
        """Cards played so far (0 after a bomb)."""
        return 0 if self.bombed() else int(sum(self.state.returns()) / len(self.possible_agents))

    def _forced_move(self, agent: str) -> str | None:
        moves = self._legal_moves(agent)
        for kind in ("(Reveal", "(Discard"):
            if found := [m for m in moves if m.startswith(kind)]:
                return found[0]
        return moves[0] if moves else None

    # ------------------------------------------------------------------ scripted play
    def _parse_view(self, agent: str) -> tuple[dict[str, int], list[tuple[str, str]], list[str]]:
        """(fireworks, own cards' possible (colours, ranks), partner's cards) from the observation."""
        lines = self._observation(agent).splitlines()
        fireworks = {}
        for line in lines:
            if line.startswith("Fireworks:"):
                fireworks = {item[0]: int(item[1:]) for item in line.split(":", 1)[1].split()}
        own, partner, block = [], [], None
        for line in lines:
            if line == "Cur player":
                block = own
            elif line == "-----":
                block = partner
            elif block is not None and (match := _CARD.match(line.strip())):
                block.append(match.group(1) if block is partner else (match.group(4), match.group(5)))
            elif line.startswith("Deck size"):
                block = None
        return fireworks, own, partner

    def heuristic_response(self, agent: str) -> str:
        """The cautious rule bot of the module docstring."""
        moves = self._legal_moves(agent)
        fireworks, own, partner = self._parse_view(agent)
        for i, (colours, ranks) in enumerate(own):
            identities = [(c, int(r)) for c in colours for r in ranks]
            if identities and all(fireworks.get(c) == r - 1 for c, r in identities):
                if f"(Play {i})" in moves:
                    return f"<answer>(Play {i})</answer>"
        for card in partner:
            colour, rank = card[0], card[1]
            if rank.isdigit() and fireworks.get(colour) == int(rank) - 1:
                for hint in (f"(Reveal player +1 rank {rank})", f"(Reveal player +1 color {colour})"):
                    if hint in moves:
                        return f"<answer>{hint}</answer>"
        if "(Discard 0)" in moves:
            return "<answer>(Discard 0)</answer>"
        # No discard (every information token is left): any hint is harmless; never a blind play.
        hints = [m for m in moves if m.startswith("(Reveal")]
        return f"<answer>{(hints or moves)[0]}</answer>" if moves else "<answer></answer>"
