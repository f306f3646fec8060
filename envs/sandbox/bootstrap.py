"""The sandbox bootstrap: the code that runs in the child interpreter.

The host runs ``python -S -s -B -u -c "<this file's source>\nmain({...config...})"``, compiled
as ``<sandbox>`` so that tracebacks can leave these frames out. ``main`` then, in order:
becomes pid 1 of the namespace (forking the program's process) when the plan is isolated
(bwrap has built the namespaces and the filesystem); sets the rlimits; drops to ``nobody`` or drops every
capability; sets RLIMIT_AS; installs the audit hook; reports "ready <layers>" on the private
status pipe; and runs ``main.py`` as ``__main__``, printing an uncaught exception as Python
would (``report``).

Constraints (why it looks the way it does): it runs in *another* interpreter, possibly a
system ``python3`` that ``nobody`` can run, with ``-S`` (no site-packages) and no access to
this package, so it imports only the standard library, keeps Python 3.8 syntax, and avoids
slow imports (``signal`` pulls in ``enum``; ``_signal`` does not). Importing this module has
no side effects, so tests can import it.
"""

import os
import sys

C = {}  # the run's configuration (session.py builds it), set by main()
W = ""  # the working directory, C["workdir"]


def say(*words):
    """One line on the private status pipe to the host."""
    try:
        os.write(C["status_fd"], (" ".join(map(str, words)) + "\n").encode())
    except OSError:
        pass


def libc():
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def check(ctypes, result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, what + ": " + os.strerror(err))


def become_init():
    """pid 1 of the namespace: fork the program, reap orphans, report the program's wait
    status and CPU time, exit (the kernel then kills what is left in the namespace)."""
    os.setsid()  # the program's kill(0) stays inside the namespace
    child = os.fork()
    if child == 0:
        return
    import _signal

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # pid 1 ignores what has no handler; SIGINT had one
    for fd in (0, 1, 2, C["stderr_fd"]):
        os.close(fd)
    while True:
        pid, status, usage = os.wait4(-1, 0)
        if pid == child:
            say("exit", status, usage.ru_utime + usage.ru_stime)
            os._exit(0)


def drop_privileges():
    ctypes, lib = libc()
    L = ctypes.c_long
    layers = []
    if C["drop_to"] is not None:
        os.setgroups([])
        os.setgid(C["drop_to"])
        os.setuid(C["drop_to"])
        layers.append("nobody")
    elif C["drop_caps"]:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
        for cap in range(last + 1):
            lib.prctl(L(24), L(cap), L(0), L(0), L(0))  # PR_CAPBSET_DROP

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

        check(ctypes, lib.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()), "capset")
        layers.append("nocaps")
    if not hasattr(lib, "prctl"):  # not Linux
        return layers
    check(ctypes, lib.prctl(L(38), L(1), L(0), L(0), L(0)), "PR_SET_NO_NEW_PRIVS")
    if not C["isolated"]:  # die with the host thread (setuid cleared any earlier setting)
        lib.prctl(L(1), L(9), L(0), L(0), L(0))  # PR_SET_PDEATHSIG, SIGKILL
        if os.getppid() != C["host_pid"]:
            os._exit(70)
    return layers


def limit_resources():
    import _signal  # not `signal`: it imports enum, several ms per run
    import resource

    def limit(kind, soft, hard):
        _, current = resource.getrlimit(kind)
        if current != resource.RLIM_INFINITY:
            soft, hard = min(soft, current), min(hard, current)
        resource.setrlimit(kind, (soft, hard))

    limit(resource.RLIMIT_CPU, C["cpu"], C["cpu"] + 1)  # SIGXCPU, then SIGKILL a second later
    limit(resource.RLIMIT_FSIZE, C["fsize"], C["fsize"])
    limit(resource.RLIMIT_CORE, 0, 0)
    layers = ["rlimits"]
    if C["nproc"] is not None:
        limit(resource.RLIMIT_NPROC, C["nproc"], C["nproc"])
        layers.append("nproc")
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)  # a too-big write fails with EFBIG instead
    return layers


def limit_memory():
    import resource

    _, current = resource.getrlimit(resource.RLIMIT_AS)
    value = C["as_bytes"] if current == resource.RLIM_INFINITY else min(C["as_bytes"], current)
    resource.setrlimit(resource.RLIMIT_AS, (value, value))


def install_audit_hook(private_tmp, contained):
    import mmap
    from os.path import basename, dirname, isabs, isdir, join, realpath

    inside_prefix = W + "/"
    fsdecode = os.fsdecode
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    forks = mmap.mmap(-1, 8)  # shared with every forked child: a run-wide counter

    def deny(why):
        raise PermissionError(1, "sandbox: " + why)

    def resolve(path, dir_fd=None, follow=True):
        path = fsdecode(path)
        if dir_fd not in (None, -1, -100) and not isabs(path):
            path = join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
        if follow:
            return realpath(path)
        return join(realpath(dirname(path) or "."), basename(path))

    def allowed(path):
        return (
            path == W
            or path.startswith(inside_prefix)
            or path == "/dev/null"
            or (private_tmp and (path.startswith("/dev/shm/") or path.startswith("/tmp/")))
        )

    def other_process(path):
        if not path.startswith("/proc/"):
            return False
        head = path[6:].split("/", 1)[0]
        return head.isdigit() and int(head) != os.getpid()

    def on_open(args):
        path, mode, flags = args
        if isinstance(path, int):
            return
        real = resolve(path)
        if other_process(real):
            deny(f"cannot read other processes' /proc files: {fsdecode(path)}")
        if allowed(real):
            return
        if (flags or 0) & write_flags or (isinstance(mode, str) and any(c in mode for c in "wax+")):
            deny(f"cannot write outside the working directory: {fsdecode(path)}")
        if mode is None and isdir(real):  # os.open of a directory: dir_fd= calls could escape
            deny(f"cannot open directories outside the working directory: {fsdecode(path)}")

    def paths(*specs):  # (path index, dir_fd index or None, follow symlinks)
        def check_paths(args):
            for index, fd_index, follow in specs:
                path = args[index]
                if isinstance(path, int):
                    continue
                dir_fd = args[fd_index] if fd_index is not None else None
                if not allowed(resolve(path, dir_fd, follow)):
                    deny(f"cannot modify files outside the working directory: {fsdecode(path)}")

        return check_paths

    def on_sqlite(args):
        database = args[0]
        if isinstance(database, (str, bytes, os.PathLike)) and fsdecode(database) not in (":memory:", ""):
            if not allowed(resolve(database)):
                deny("cannot open databases outside the working directory")

    def on_kill(args):
        pid = args[0]
        if pid in (0, os.getpid()):
            return
        if pid == -1:
            deny("cannot signal every process")
        try:
            group = -pid if pid < 0 else os.getpgid(pid)
        except OSError:
            group = None
        if group != os.getpgrp():
            deny("cannot signal processes outside the sandbox")

    def on_killpg(args):
        if args[0] not in (0, os.getpgrp()):
            deny("cannot signal processes outside the sandbox")

    def on_fork(args):
        count = int.from_bytes(forks[:8], "little") + 1
        forks[:8] = count.to_bytes(8, "little")
        if count >= C["max_forks"]:  # the program itself is one of its max_processes
            raise BlockingIOError(11, "sandbox: process limit reached")

    def refuse(why):
        def handler(*args, **kwargs):
            deny(why)

        return handler

    handlers = {
        "open": on_open,
        "os.mkdir": paths((0, 2, False)),
        "os.rmdir": paths((0, 1, False)),
        "os.remove": paths((0, 1, False)),
        "os.rename": paths((0, 2, False), (1, 3, False)),
        "os.link": paths((0, 2, True), (1, 3, False)),
        "os.symlink": paths((1, 2, False)),
        "os.chmod": paths((0, 2, True)),
        "os.chown": paths((0, 3, True)),
        "os.utime": paths((0, 3, True)),
        "os.truncate": paths((0, None, True)),
        "os.setxattr": paths((0, None, True)),
        "os.removexattr": paths((0, None, True)),
        "os.chflags": paths((0, None, True)),
        "sqlite3.connect": on_sqlite,
        "os.kill": on_kill,
        "os.killpg": on_killpg,
        "os.fork": on_fork,
        "os.forkpty": on_fork,
    }
    if not C["network"]:
        no_network = refuse("network access is disabled")

        def on_socket(args):
            if args[1] != 1:  # AF_UNIX socketpairs (asyncio, multiprocessing) keep working
                no_network()

        def on_send(args):
            if args[1] is not None:
                no_network()

        handlers["socket.__new__"] = on_socket
        handlers["socket.sendto"] = on_send
        handlers["socket.sendmsg"] = on_send
        for event in (
            "socket.connect",
            "socket.bind",
            "socket.getaddrinfo",
            "socket.gethostbyname",
            "socket.gethostbyname_ex",
            "socket.gethostbyaddr",
            "socket.getnameinfo",
        ):
            handlers[event] = no_network
    if not contained:  # a new program would run without this hook and outside any wall
        no_exec = refuse("cannot start other programs in this sandbox (no namespaces)")
        for event in (
            "os.exec",
            "os.posix_spawn",
            "os.spawn",
            "os.system",
            "subprocess.Popen",
            "ctypes.dlsym",
            "ctypes.cdata",
        ):
            handlers[event] = no_exec

        def on_dlopen(args):
            if args[0] is not None:  # `import ctypes` itself opens the main program
                no_exec()

        handlers["ctypes.dlopen"] = on_dlopen
        import _posixsubprocess
        import _signal  # entry points without an audit event

        _posixsubprocess.fork_exec = no_exec
        _signal.pidfd_send_signal = no_exec  # `signal` copies it from _signal when imported
        os.pidfd_open = no_exec

    def hook(event, args):
        handler = handlers.get(event)
        if handler is not None:
            handler(args)

    sys.addaudithook(hook)


def run_program():
    import site

    site.setquit()  # -S skipped site: define exit() and quit() as usual
    site.sethelper()
    sys.argv[:] = ["main.py"]
    sys.path[:] = [W] + [p for p in sys.path if p] + C["site"]
    main = type(sys)("__main__")
    main.__file__ = "main.py"
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    with open("main.py", "rb") as f:
        source = f.read()
    exec(compile(source, "main.py", "exec"), main.__dict__)


def report(exc):
    """Print an uncaught exception as Python would, without the bootstrap's frames (the
    -c line first, then "<sandbox>" ones: run_program, the audit hook's)."""
    if isinstance(exc, MemoryError):
        say("memory")
    kept = []
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name != "<sandbox>" and (kept or name != "<string>"):
            kept.append(tb)
        tb = tb.tb_next
    tb = None
    for frame in reversed(kept):
        tb = type(frame)(tb, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)  # it prints exc.__traceback__


def main(config):
    """Set up the layers ``config`` asks for, report them, run the program, report how it
    ended. The host appends ``main({...})`` to this module's source (``session.py``)."""
    global C, W
    C, W = config, config["workdir"]
    try:
        os.chdir(W)
        layers = []
        if C["isolated"]:
            become_init()
        layers += limit_resources()
        layers += drop_privileges()
        limit_memory()
        install_audit_hook(private_tmp=C["isolated"], contained=C["isolated"])
        layers.append("audit")
    except BaseException:
        import traceback

        traceback.print_exc()
        sys.stderr.write("sandbox: setup failed\n")
        os._exit(70)

    os.dup2(C["stderr_fd"], 2)  # from here on fd 2 is the program's stderr pipe
    os.close(C["stderr_fd"])
    say("ready", *layers)
    try:
        run_program()
    except SystemExit:
        raise
    except BaseException as exc:
        report(exc)
        sys.exit(1)
