"""Per-child confinement applied after fork: rlimits, a seccomp filter and an audit hook."""

import ctypes
import errno
import os
import resource
import signal
import sys
from typing import Any

# Syscalls a handler never needs. A deny-list with ALLOW as default: CPython's own syscall set varies by build,
# and the namespaces plus read-only root stay the primary wall; this closes process, network, kernel-surface and
# signalling paths on top of them. EPERM surfaces in Python as PermissionError.
DENIED_SYSCALLS = (
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "execve", "execveat", "fork", "vfork", "clone",
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal",
    "pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr", "name_to_handle_at", "open_by_handle_at",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "personality", "mknod", "mknodat",
    "setrlimit", "prlimit64", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
    "setgroups", "setsid", "setpgid", "ioctl", "quotactl", "lookup_dcookie", "syslog", "vhangup",
    "memfd_create", "landlock_create_ruleset",
)  # fmt: skip
ACT_ALLOW = 0x7FFF0000
ACT_ERRNO = 0x00050000

# Imports a handler is refused outright (the kernel would refuse their effect anyway; this names the reason).
FORBIDDEN_IMPORTS = frozenset(
    {"ctypes", "_ctypes", "socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess", "multiprocessing",
     "_multiprocessing", "pty", "fcntl", "mmap", "signal", "_signal", "resource", "threading", "_thread"}
)  # fmt: skip
FORBIDDEN_EVENT_PREFIXES = (
    "socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.kill", "os.killpg", "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
    "os.symlink", "os.link", "os.truncate", "os.utime", "os.chdir", "os.putenv", "os.unsetenv", "ctypes.",
    "pty.", "mmap.", "shutil.", "sys.remote_exec", "resource.",
)  # fmt: skip
_PATH_EVENTS = ("open", "os.listdir", "os.scandir")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class SandboxViolation(PermissionError):
    """The handler tried something handlers may not do (network, files, processes, signals, native code)."""


class SeccompFilter:
    """A libseccomp filter built once in the server and loaded in each forked child."""

    def __init__(self) -> None:
        self._lib: Any = None
        self._ctx: int | None = None
        try:
            self._lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
        except OSError:
            return
        self._lib.seccomp_init.restype = ctypes.c_void_p
        self._lib.seccomp_load.argtypes = [ctypes.c_void_p]
        self._lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
        self._ctx = self._build()

    @property
    def available(self) -> bool:
        """Whether libseccomp was found and the filter compiled."""
        return self._ctx is not None

    def _build(self) -> int | None:
        ctx = self._lib.seccomp_init(ACT_ALLOW)
        if not ctx:
            return None
        for name in DENIED_SYSCALLS:
            self._deny(ctx, name, errno.EPERM)
        self._deny(ctx, "clone3", errno.ENOSYS)  # makes glibc fall back to clone, which is denied
        return int(ctx)

    def _deny(self, ctx: int, name: str, err: int) -> None:
        number = self._lib.seccomp_syscall_resolve_name(name.encode())
        if number >= 0:
            self._lib.seccomp_rule_add(ctx, ACT_ERRNO | err, number, 0)

    def load(self) -> bool:
        """Load the filter into the calling process (irreversible; sets no_new_privs)."""
        return self._ctx is not None and self._lib.seccomp_load(self._ctx) == 0


def apply_rlimits(limits: dict[str, Any]) -> None:
    """Cap CPU, address space, processes, file size, open files and core dumps of the calling process."""
    cpu = int(limits["cpu_seconds"])
    address_space = _current_address_space() + int(limits["memory_mb"]) * 1024 * 1024
    for which, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),  # SIGXCPU at the soft limit, SIGKILL one second later
        (resource.RLIMIT_AS, (address_space, address_space)),
        (resource.RLIMIT_NPROC, (0, 0)),
        (resource.RLIMIT_FSIZE, (0, 0)),
        (resource.RLIMIT_NOFILE, (64, 64)),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(which, value)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past FSIZE fails with EFBIG instead of killing


def _current_address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def install_audit_hook(readable_prefixes: tuple[str, ...]) -> None:
    """Refuse, by audit event, everything a handler has no business doing (PEP 578; not a wall by itself)."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "import" and args[0].partition(".")[0] in FORBIDDEN_IMPORTS:
            raise SandboxViolation(f"handlers may not import {args[0]}")
        if event.startswith(FORBIDDEN_EVENT_PREFIXES):
            raise SandboxViolation(f"handlers may not use {event}")
        if event in _PATH_EVENTS and not _readable(event, args, readable_prefixes):
            raise SandboxViolation(f"handlers have no filesystem access ({event} {args[0]!r})")

    sys.addaudithook(hook)


def _readable(event: str, args: tuple[Any, ...], prefixes: tuple[str, ...]) -> bool:
    path = args[0]
    if not isinstance(path, str) or not path.startswith(prefixes) or ".." in path:
        return False
    flags = args[2] if event == "open" and len(args) > 2 else 0
    return not (isinstance(flags, int) and flags & _WRITE_FLAGS)


def stdlib_prefixes() -> tuple[str, ...]:
    """Directories a handler may read from: only the standard library, for lazy imports."""
    return tuple(sorted({os.path.join(p, "") for p in sys.path if p and os.path.isdir(p)}))
