import math

import numpy as np

from torch_diode.selection import selection_order


def test_plain_order_without_preference():
    t = np.log([5.0, 3.0, 4.0, 1.0])
    assert selection_order(t, [True, False, False, False]).tolist() == [3, 1, 2, 0]


def test_extern_goes_first_only_within_the_margin():
    # template 1.0 us, extern 1.08 us: within 10%, the extern leads
    t = np.log([1.08, 1.0, 2.0])
    extern = [True, False, False]
    assert selection_order(t, extern, 1.1).tolist() == [0, 1, 2]
    assert selection_order(t, extern, 1.0).tolist() == [1, 0, 2]
    # 20% slower: the template keeps the lead
    t2 = np.log([1.2, 1.0, 2.0])
    assert selection_order(t2, extern, 1.1).tolist() == [1, 0, 2]


def test_only_usable_candidates_and_the_best_extern_among_several():
    t = np.array([math.log(v) for v in (1.05, 1.02, 1.0, 0.5)])
    extern = np.array([True, True, False, False])
    # candidate 3 is not usable (e.g. too much shared memory); 2 is the best template
    order = selection_order(t, extern, 1.1, usable=np.array([0, 1, 2]))
    assert order.tolist() == [1, 2, 0]


def test_no_extern_candidates():
    t = np.log([2.0, 1.0])
    assert selection_order(t, [False, False], 1.5).tolist() == [1, 0]
