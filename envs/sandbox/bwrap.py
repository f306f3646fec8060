"""The isolated mode's wall: a bubblewrap (``bwrap``) command line that gives the program a
minimal filesystem of its own and fresh pid, IPC, UTS and (unless ``network``) network
namespaces.

Why bubblewrap rather than our own ``unshare``/``mount`` code: it is the sandbox Flatpak
and many distributions ship and audit, it builds a root filesystem from nothing (a tmpfs
with only what is bound into it), and it works both for root and, through a user namespace,
for an unprivileged user. What the program sees:

* read-only: ``/usr`` (and ``/bin``, ``/sbin``, ``/lib*`` as on the host: symlinks into it
  on merged-/usr systems), the dynamic loader's cache and ``/etc/localtime``, and the
  interpreter's own trees (``sys.prefix``, ``sys.base_prefix``, their exec prefixes and
  site-packages); with ``network`` also the resolver's files and the CA certificates;
* writable: its working directory (the same path as on the host), a private ``/tmp`` and
  ``/dev/shm`` (size-capped tmpfs); a private ``/proc`` for its pid namespace and bwrap's
  minimal ``/dev`` (null, zero, full, random, urandom, tty, pts);
* nothing else: no ``/root``, ``/home``, ``/run``, ``/var``, ``/sys``, ``/etc/shadow``, no
  socket file of the host. The directories leading to a bound tree (``/root/.pyenv`` for
  a pyenv interpreter) are created empty with mode 0755.

As root, bwrap sets up the namespaces with real privileges (no user namespace: a process
in one would still be host uid 0, which RLIMIT_NPROC never limits) and keeps only
CAP_SETUID, CAP_SETGID and CAP_DAC_OVERRIDE (to enter the working directory, which already
belongs to ``nobody``); with them the bootstrap switches the program to ``nobody`` (65534),
an unprivileged host identity without capabilities. As another user it adds a user namespace in which
the program is uid/gid 65534 without capabilities and may not create further user
namespaces.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys

__all__ = ["bwrap_path", "bwrap_command", "interpreter_trees"]

_ETC_ALWAYS = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
_ETC_NETWORK = (
    "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
    "/etc/ssl", "/etc/ca-certificates", "/etc/pki",
)  # fmt: skip
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@functools.lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=8)
def interpreter_trees(python: str) -> tuple[str, ...]:
    """The host directories ``python`` needs: its prefixes (the standard library, the shared
    libraries of a pyenv/conda build) and site-packages; for another interpreter, asked of it
    once. Trees under ``/usr`` are bound anyway and left out."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        import site

        paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()]
    else:
        ask = "import sys; print(sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)"
        try:
            answer = subprocess.run([python, "-S", "-c", ask], capture_output=True, text=True, timeout=60)
            paths = answer.stdout.split()  # prefixes with spaces are not supported
        except (OSError, subprocess.SubprocessError):
            paths = []
    paths += [os.path.dirname(os.path.abspath(python)), os.path.dirname(os.path.realpath(python))]
    return _outermost(os.path.realpath(path) for path in paths if path and os.path.isdir(path))


def _outermost(paths) -> tuple[str, ...]:
    """Distinct paths, none inside another or inside /usr (bound as a whole)."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(_inside(path, outer) for outer in ["/usr", *kept]):
            kept.append(path)
    return tuple(sorted(kept))


def _inside(path: str, outer: str) -> bool:
    return path == outer or path.startswith(outer.rstrip("/") + "/")


def _parents(path: str) -> list[str]:
    """``/a/b/c`` -> ``["/a", "/a/b"]``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_command(
    *,
    workdir: str,
    trees: tuple[str, ...],
    as_root: bool,
    network: bool,
    tmpfs_bytes: int,
) -> list[str]:
    """The ``bwrap ... --`` prefix for one run (the interpreter command follows it). bwrap
    passes inherited descriptors (the status pipe) through unchanged."""
    command = [bwrap_path() or "bwrap", "--die-with-parent", "--as-pid-1"]
    command += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        command.append("--unshare-net")
    if as_root:  # real privileges set up the namespaces; the bootstrap then becomes nobody
        # CAP_DAC_OVERRIDE: the working directory already belongs to nobody (mode 0700)
        command += ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_DAC_OVERRIDE"):
            command += ["--cap-add", cap]
    else:
        command += ["--unshare-user", "--disable-userns", "--uid", "65534", "--gid", "65534"]
    command += ["--ro-bind", "/usr", "/usr"]
    for top in _TOP_LEVEL:
        if os.path.islink(top):
            command += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            command += ["--ro-bind", top, top]
    etc = _ETC_ALWAYS + (_ETC_NETWORK if network else ())
    command += [arg for path in etc if os.path.exists(path) for arg in ("--ro-bind", path, path)]
    made: set[str] = {"/usr", "/tmp", *_TOP_LEVEL}
    command += ["--proc", "/proc", "--dev", "/dev"]
    command += ["--perms", "1777", "--size", str(tmpfs_bytes), "--tmpfs", "/dev/shm"]
    command += ["--perms", "1777", "--size", str(tmpfs_bytes), "--tmpfs", "/tmp"]
    for tree in (*trees, workdir):
        for parent in _parents(tree):
            if parent not in made and not any(_inside(parent, bound) for bound in trees if bound != tree):
                command += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        command += ["--bind" if tree == workdir else "--ro-bind", tree, tree]
    command += ["--chdir", workdir, "--"]
    return command


@functools.lru_cache(maxsize=8)
def site_packages(python: str) -> list[str]:
    """The host interpreter's site-packages (the child runs with -S); none for another
    interpreter, whose layout we do not know."""
    if os.path.realpath(python) != os.path.realpath(sys.executable):
        return []
    # real paths: the trees are bound at them (a symlinked venv is not there under the link's name)
    return [os.path.realpath(path) for path in site.getsitepackages() if os.path.isdir(path)]
