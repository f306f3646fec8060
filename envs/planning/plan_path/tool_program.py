import sys
from collections import deque

rows = [line.split()[1] for line in sys.stdin.read().splitlines()[1:]]
cells = {(r, c): x for r, row in enumerate(rows) for c, x in enumerate(row)}
start = next(cell for cell, x in cells.items() if x == "A")
steps = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
came = {start: None}
queue = deque([start])
while queue:
    cell = queue.popleft()
    if cells[cell] == "G":
        break
    for move, (dr, dc) in steps.items():
        nxt = (cell[0] + dr, cell[1] + dc)
        if cells.get(nxt, "#") != "#" and nxt not in came:
            came[nxt] = (cell, move)
            queue.append(nxt)
moves = []
while came[cell]:
    cell, move = came[cell]
    moves.append(move)
print(" ".join(reversed(moves)))
