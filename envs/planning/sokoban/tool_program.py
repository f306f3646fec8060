import sys

grid = [line.split()[1] for line in sys.stdin.read().splitlines()[1:]]
cells = {(r, c): x for r, row in enumerate(grid) for c, x in enumerate(row)}
targets = {cell for cell, x in cells.items() if x in ".*+"}
player = next(cell for cell, x in cells.items() if x in "@+")
boxes = frozenset(cell for cell, x in cells.items() if x in "$*")
queue, seen = [(player, boxes, "")], {(player, boxes)}
for (r, c), boxes, path in queue:
    if boxes <= targets:
        print(" ".join(path))
        break
    for move, dr, dc in (("U", -1, 0), ("D", 1, 0), ("L", 0, -1), ("R", 0, 1)):
        step, beyond = (r + dr, c + dc), (r + 2 * dr, c + 2 * dc)
        moved = boxes - {step} | {beyond} if step in boxes else boxes
        blocked = cells[step] == "#" or (step in boxes and (cells[beyond] == "#" or beyond in boxes))
        if not blocked and (step, moved) not in seen:
            seen.add((step, moved))
            queue.append((step, moved, path + move))
