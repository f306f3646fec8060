import sys

grid = [line.split()[1] for line in sys.stdin.read().splitlines()[1:]]
queue = [(r, c, "") for r, row in enumerate(grid) for c, x in enumerate(row) if x == "A"]
seen = set()
for r, c, path in queue:
    if grid[r][c] == "G":
        print(" ".join(path))
        break
    for move, dr, dc in (("U", -1, 0), ("D", 1, 0), ("L", 0, -1), ("R", 0, 1)):
        y, x = r + dr, c + dc
        if 0 <= y < len(grid) and 0 <= x < len(grid[0]) and grid[y][x] != "#" and (y, x) not in seen:
            seen.add((y, x))
            queue.append((y, x, path + move))
