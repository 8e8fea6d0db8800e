import threading
import time

import pytest

from textcluster._threads import each, thread_pool


@pytest.mark.parametrize("workers", [None, 1, 2, 3])
def test_each_returns_the_results_in_the_items_order(workers):
    def slow_square(x):
        time.sleep(0.001 * (x % 3))  # finish out of order
        return x * x

    assert each(slow_square, range(10), workers) == [x * x for x in range(10)]
    assert each(slow_square, [], workers) == []


def test_each_runs_items_in_the_calling_thread_and_the_pool():
    seen, both = set(), threading.Barrier(2, timeout=10)

    def work(_):
        seen.add(threading.current_thread().name)
        both.wait()  # only returns once two threads are in here at the same time

    each(work, [0, 1], 2)
    assert threading.current_thread().name in seen and len(seen) == 2


def test_each_raises_what_an_item_raises():
    def work(x):
        if x == 3:
            raise ValueError("item 3")
        return x

    with pytest.raises(ValueError, match="item 3"):
        each(work, range(6), 2)


def test_each_does_not_wait_for_a_pool_busy_elsewhere():
    # the pool's only thread is held; the caller does every item itself instead of waiting
    release, held = threading.Event(), threading.Event()

    def hold():
        held.set()
        release.wait(10)

    blocker = thread_pool(1).submit(hold)
    held.wait(10)
    try:
        done = []
        assert each(done.append, [1, 2, 3], 2) == [None] * 3
        assert done == [1, 2, 3]
    finally:
        release.set()
        blocker.result()
