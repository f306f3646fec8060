import sys
from collections import deque

rows = [line.split()[1] for line in sys.stdin.read().splitlines()[1:]]
cells = {(r, c): x for r, row in enumerate(rows) for c, x in enumerate(row)}
walls = {cell for cell, x in cells.items() if x == "#"}
targets = {cell for cell, x in cells.items() if x in ".*+"}
player = next(cell for cell, x in cells.items() if x in "@+")
boxes = frozenset(cell for cell, x in cells.items() if x in "$*")
steps = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
came = {(player, boxes): None}
queue = deque([(player, boxes)])
while queue:
    state = queue.popleft()
    player, boxes = state
    if boxes <= targets:
        break
    for move, (dr, dc) in steps.items():
        nxt = (player[0] + dr, player[1] + dc)
        moved = boxes
        if nxt in boxes:
            beyond = (nxt[0] + dr, nxt[1] + dc)
            if beyond in walls or beyond in boxes:
                continue
            moved = boxes - {nxt} | {beyond}
        if nxt not in walls and (nxt, moved) not in came:
            came[(nxt, moved)] = (state, move)
            queue.append((nxt, moved))
moves = []
while came[state]:
    state, move = came[state]
    moves.append(move)
print(" ".join(reversed(moves)))
