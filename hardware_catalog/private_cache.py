"""Files in capplan's cache folder that another account cannot turn against the user.

A cache folder is often shared in practice (``XDG_CACHE_HOME`` on a cluster's shared
home, ``/tmp``).  What is read from it is trusted only when nobody else could have
written it:

- the folder is created ``0700`` (whatever the umask) and used only if it is a folder
  owned by this user (:func:`private_folder`).  A folder of the user's that others may
  write to (made ``0775`` under a umask of 002 by an older capplan, or the user's own
  choice) is not changed and still used: what others put there is refused file by file;
- a file is used only if it is a regular file (not a symlink, FIFO, device ...), owned
  by this user and not writable by the group or others; it is opened with
  ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a
  swapped link or a FIFO can neither redirect nor block the read (:func:`read_private`);
- writes go to a ``0600`` temporary file in the same folder, renamed over the old one
  (:func:`write_private`).

A file that fails a check is a cache miss, never an error: the reason is returned so the
caller can say it once (:func:`warn_once`).  Shared by the catalog's TOML cache
(:mod:`hardware_catalog.toml_cache`), the validated shipped catalog and price table
(:mod:`hardware_catalog.validated_cache`) and meant for any other cache of capplan.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path

#: Group- or world-writable permission bits.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH

_warned = False


class Untrusted(Exception):
    """A cache folder or file that is not safe to use; the message says why (one line)."""


def _my_uid() -> int:
    return os.getuid()


def _check_owner_and_mode(info: os.stat_result, what: str) -> None:
    if info.st_uid != _my_uid():
        raise Untrusted(f"{what} is owned by uid {info.st_uid}, not by you "
                        f"(uid {_my_uid()})")
    if info.st_mode & _OTHERS_WRITE:
        raise Untrusted(f"{what} is writable by other users "
                        f"(mode {stat.S_IMODE(info.st_mode):04o})")


def private_folder(folder: Path, *, create: bool) -> Path:
    """``folder``, checked (and with ``create``, made ``0700`` with missing parents).

    Raises :class:`Untrusted` (not a folder, another owner) or ``OSError`` (cannot be
    created); ``FileNotFoundError`` when it is missing and not ``create``.
    """
    if create and not folder.exists():
        for parent in reversed([folder, *folder.parents]):
            if not parent.exists():
                try:
                    os.mkdir(parent, 0o700)
                except FileExistsError:
                    continue
                os.chmod(parent, 0o700)  # mkdir's mode is masked by the umask
    info = os.stat(folder)  # a link to a folder of ours is fine; the owner decides
    if not stat.S_ISDIR(info.st_mode):
        raise Untrusted(f"{folder} is not a folder")
    if info.st_uid != _my_uid():
        raise Untrusted(f"cache folder {folder} is owned by uid {info.st_uid}, not by you "
                        f"(uid {_my_uid()})")
    return folder


def read_private(path: Path, *, max_bytes: int) -> bytes:
    """The bytes of ``path`` if it is a private regular file of this user.

    Raises ``FileNotFoundError`` when it does not exist, :class:`Untrusted` when it is
    not safe to read (a symlink, FIFO or other non-regular file, another owner,
    group/world-writable, larger than ``max_bytes``) and ``OSError`` when it cannot be
    read.  Never blocks on a FIFO and never follows a final symlink.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):  # ELOOP (Linux) or EMLINK (BSD) on a final symlink
            raise Untrusted(f"{path} is a symbolic link") from None
        raise exc
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise Untrusted(f"{path} is not a regular file")
        _check_owner_and_mode(info, str(path))
        if info.st_size > max_bytes:
            raise Untrusted(f"{path} is larger than {max_bytes:,} bytes")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(descriptor, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise Untrusted(f"{path} is larger than {max_bytes:,} bytes")
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def write_private(path: Path, data: bytes, *, max_bytes: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically as a ``0600`` file of this user.

    The folder is created ``0700`` if missing and must pass :func:`private_folder`.
    Raises ``OSError`` or :class:`Untrusted`; never leaves a partial file behind.  Never
    writes what :func:`read_private` with the same ``max_bytes`` would refuse (a cache that
    warns on every run): larger ``data`` raises :class:`Untrusted` and removes an older
    file at ``path``, which holds stale entries (a miss) or is itself too large.  Callers
    pass their reader's limit (``None``: unchecked, e.g. a file of a few kB).
    """
    folder = private_folder(path.parent, create=True)
    if max_bytes is not None and len(data) > max_bytes:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        raise Untrusted(f"{len(data):,} bytes for {path}, more than the {max_bytes:,} it "
                        "may hold")
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.",
                                             suffix=".tmp")  # mkstemp: mode 0600
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), 0o600)
        os.replace(temporary, path)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def warn_once(message: str) -> None:
    """Print one warning line on stderr, the first time only (per process)."""
    global _warned
    if _warned:
        return
    _warned = True
    text = " ".join(message.split())
    print(f"capplan: warning: {text}", file=sys.stderr)


def reset_warning() -> None:
    """Allow :func:`warn_once` to print again (tests)."""
    global _warned
    _warned = False
