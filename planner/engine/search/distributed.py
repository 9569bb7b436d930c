"""Run independent search tasks in process or on Dask (``capplan[dask]``), results in task order.

A search is split into tasks (a slice of one accelerator's layout space, or one
hypothetical accelerator of a co-design grid); each task reduces its candidates
to a small partial result, and the caller combines the partial results in task
order.  The order of the results never depends on the scheduler, so a run on a
Dask cluster gives exactly the in-process answer.

Schedulers:

* ``None`` or ``"in-process"``: this process (no Dask), on ``workers`` threads (default:
  the cores this process may use; 1: a plain loop).  The compiled search loop
  (:mod:`planner.engine.search.native_search`) releases the GIL, so a plan's tasks run side by
  side; the numpy parts take turns;
* ``"processes"``: a ``distributed.LocalCluster`` of ``workers`` processes, one thread each;
* ``"threads"``: a ``LocalCluster`` of one process with ``workers`` threads;
* ``"tcp://HOST:PORT"``: an existing cluster's scheduler (``dask scheduler`` /
  ``dask worker``); its workers need capplan installed, at the same version.
"""

from __future__ import annotations

import difflib
import logging
import os
import queue
import re
import threading
import warnings
from collections.abc import Callable, Sequence

from planner.errors import CapplanError, one_line

SCHEDULERS = ("in-process", "processes", "threads", "tcp://HOST:PORT")
#: Most threads or local worker processes one run starts (a cluster's own workers are
#: started by its operator, not counted here).
MAX_WORKERS = 4096
_ADDRESS = re.compile(r"^tcp://[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$")


def check_scheduler(scheduler: str | None, workers: int | None = None) -> str:
    """The scheduler name (``in-process`` for None); CapplanError naming what is allowed."""
    if workers is not None and workers < 1:
        raise CapplanError(f"--workers must be >= 1, got {workers}")
    if workers is not None and workers > MAX_WORKERS:
        raise CapplanError(f"--workers must be <= {MAX_WORKERS:,} (threads or local worker "
                           f"processes), got {workers:,}")
    if scheduler in (None, "in-process"):
        return "in-process"
    if scheduler in ("processes", "threads"):
        _require_dask(scheduler)
        return scheduler
    if scheduler.startswith("tcp://"):
        if not _ADDRESS.match(scheduler):
            raise CapplanError(f"--scheduler '{one_line(scheduler)}' is not an address "
                               "tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)")
        _require_dask(scheduler)
        return scheduler
    close = difflib.get_close_matches(scheduler, SCHEDULERS[:3], n=1)
    hint = f"; did you mean: {close[0]}?" if close else ""
    raise CapplanError(f"unknown --scheduler '{one_line(scheduler)}'; allowed: "
                       f"{' | '.join(SCHEDULERS)}{hint}")


def _require_dask(scheduler: str) -> None:
    """One install hint (exit 2) before any work when Dask is not installed."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise CapplanError(f"--scheduler {scheduler} needs Dask, which is not installed "
                           f"({exc.name or exc}): pip install 'capplan[dask]', or leave "
                           "--scheduler out to search in this process") from None


def run_tasks(function: Callable, tasks: Sequence, *, scheduler: str | None = None,
              workers: int | None = None,
              progress: Callable[[int, int, str], None] | None = None,
              labels: Sequence[str] | None = None) -> list:
    """``[function(task) for task in tasks]`` on ``scheduler``; ``progress(done, total, label)``.

    ``function`` must be a module-level function (Dask pickles it by name).  On Ctrl-C
    the Dask futures are cancelled and the client and cluster closed before
    ``KeyboardInterrupt`` propagates.
    """
    scheduler = check_scheduler(scheduler, workers)
    labels = list(labels) if labels is not None else [""] * len(tasks)
    if scheduler == "in-process":
        threads = min(workers or usable_cores(), len(tasks))
        if threads > 1:
            return _run_on_threads(function, tasks, threads, progress, labels)
        results = []
        for done, task in enumerate(tasks):
            if progress is not None:
                progress(done, len(tasks), labels[done])
            results.append(function(task))
        if progress is not None:
            progress(len(tasks), len(tasks), "")
        return results
    return _run_on_dask(function, tasks, scheduler, workers, progress, labels)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; ``os.cpu_count()`` elsewhere)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _run_on_threads(function, tasks, threads: int, progress, labels) -> list:
    """The in-process run on ``threads`` daemon threads, results in task order.

    On an error or Ctrl-C the tasks not started are never started, and the process does
    not wait for those running: a compiled search call cannot be interrupted, and a
    thread pool's threads would be joined at exit (a Ctrl-C then took 7-10 s to end
    the process).  Daemon threads are dropped when the process exits.
    """
    total = len(tasks)
    order = iter(range(total))
    order_lock = threading.Lock()
    stop = threading.Event()
    finished: queue.Queue = queue.Queue()  # (index, result, exception); get() sees Ctrl-C

    def work() -> None:
        while not stop.is_set():
            with order_lock:
                index = next(order, None)
            if index is None:
                return
            try:
                finished.put((index, function(tasks[index]), None))
            except BaseException as exc:  # handed to the caller's thread
                finished.put((index, None, exc))

    for number in range(threads):
        threading.Thread(target=work, name=f"capplan-search-{number}", daemon=True).start()
    results = [None] * total
    try:
        if progress is not None:
            progress(0, total, "")
        for done in range(1, total + 1):
            index, result, error = finished.get()
            if error is not None:
                raise error
            results[index] = result
            if progress is not None:
                progress(done, total, labels[index])
        return results
    finally:
        stop.set()


def _client(scheduler: str, workers: int | None):
    """(client, cluster or None) for ``scheduler``; CapplanError when Dask is missing."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise CapplanError(f"--scheduler {scheduler} needs Dask: pip install 'capplan[dask]' "
                           f"({exc})") from None
    # Dask's nanny exports MALLOC_TRIM_THRESHOLD_=65536 to the workers it spawns; set at all,
    # it freezes glibc's mmap threshold, so every block's arrays are fresh mmaps, page-faulted
    # and returned: a third of a search's CPU time was system time (73 of 215 s on the
    # Mixtral plan). Unset (None), the workers allocate as this process does.
    dask.config.set({"logging.distributed": "error", "distributed.admin.tick.limit": "1h",
                     "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None})
    for name in ("distributed", "distributed.worker", "distributed.nanny",
                 "distributed.scheduler", "distributed.core", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if scheduler.startswith("tcp://"):
        try:
            return Client(scheduler, timeout="10s"), None
        except OSError as exc:
            raise CapplanError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    count = workers or os.cpu_count() or 1
    shape = {"n_workers": count, "threads_per_worker": 1} if scheduler == "processes" else \
        {"n_workers": 1, "threads_per_worker": count}
    with warnings.catch_warnings():  # e.g. "port 8787 in use": the dashboard takes a free one
        warnings.simplefilter("ignore")
        cluster = LocalCluster(**shape, processes=scheduler == "processes",
                               dashboard_address=":0", silence_logs=logging.CRITICAL)
        return Client(cluster), cluster


def _run_on_dask(function, tasks, scheduler, workers, progress, labels) -> list:
    from distributed import as_completed

    client, cluster = _client(scheduler, workers)
    futures = []
    try:
        with warnings.catch_warnings():  # tasks carry their inputs; a large graph is expected
            warnings.filterwarnings("ignore", message="Sending large graph")
            futures = client.map(function, list(tasks), pure=False)
        position = {f.key: i for i, f in enumerate(futures)}
        if progress is not None:
            progress(0, len(futures), "")
        for done, future in enumerate(as_completed(futures), start=1):
            if future.status == "error":
                future.result()  # raises the task's exception here
            if progress is not None:
                progress(done, len(futures), labels[position[future.key]])
        return client.gather(futures)
    except BaseException:
        client.cancel(futures, force=True)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
