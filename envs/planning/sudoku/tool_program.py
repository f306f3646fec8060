import sys

rows = [line.split()[1:] for line in sys.stdin.read().splitlines() if "|" in line]
grid = [[int(x) if x != "." else 0 for x in row if x != "|"] for row in rows]
n = len(grid)
bh = int(n**0.5)
bw = n // bh


def fits(r, c, d):
    top, left = r - r % bh, c - c % bw
    box = [grid[i][j] for i in range(top, top + bh) for j in range(left, left + bw)]
    return d not in grid[r] and d not in [row[c] for row in grid] and d not in box


def solve():
    for r in range(n):
        for c in range(n):
            if grid[r][c] == 0:
                for d in range(1, n + 1):
                    if fits(r, c, d):
                        grid[r][c] = d
                        if solve():
                            return True
                        grid[r][c] = 0
                return False
    return True


empty = [(r, c) for r in range(n) for c in range(n) if grid[r][c] == 0]
solve()
print(", ".join(f"r{r + 1}c{c + 1}={grid[r][c]}" for r, c in empty))
