"""Numba kernels of the BM25 search, each beside its pure-Python twin.

One of the two kernel modules (the other is :mod:`webshop_gym.reward._kernels`; both compile
through :mod:`webshop_gym.utils.jit`, the only module that imports numba).  Each function is written
once as plain Python over numpy arrays (the *twin*, for tests and reading) and compiled with
``numba.njit(cache=True, nogil=True)`` into the ``*_jit`` binding that
:class:`~webshop_gym.search.bm25.BM25Search` calls.

Scoring follows :mod:`webshop_gym.search.scoring` operation by operation: a term's weight and
its per-document score in float32, a document's sum in float64, the final score in float32.
Results are ordered by score (descending), then by document number (ascending), which is the
order of the ``id`` field (the asin) that Pyserini breaks ties with.

Documents are gathered term at a time, their partial scores kept in the order they were first
met (so that finding the current 50th best is a sequential scan), with a safe shortcut: terms
are taken in decreasing order of their highest possible score, and once the scores still to
come cannot lift a new document to the current 50th best, the remaining terms only update the
documents that can still reach it.  The shortcut never changes a result: every bound is computed
with the same float arithmetic as the scores and compared conservatively.
"""

from __future__ import annotations

import numpy as np

from webshop_gym.utils.jit import jit as _jit
from webshop_gym.utils.jit import rebind as _rebind

_ONE = np.float32(1.0)
_SLACK = 1.0 + 2.0**-40
SEEDS = 8  # ranges scored before the others are bounded against the k-th best


def tf_factors(term_ptr, docs, freqs, norms, cache, tf, max_tf):
    """Each posting's ``1 + freq * cache[norm]`` (float32, as Lucene computes it) and each term's largest.

    A posting then scores ``weight - weight / tf`` exactly as Lucene's
    ``weight - weight / (1f + freq * normInverse)``.
    """
    for t in range(term_ptr.shape[0] - 1):
        best = _ONE
        for p in range(term_ptr[t], term_ptr[t + 1]):
            y = _ONE + np.float32(freqs[p]) * cache[norms[docs[p]]]
            tf[p] = y
            if y > best:
                best = y
        max_tf[t] = best


def term_bounds(term_ids, boosts, idf, max_tf, weights, bounds):
    """Each query term's weight (``boost * idf``, float32) and its highest score in any document.

    The score is monotonic in ``1 + freq * cache[norm]`` (Lucene rewrote the formula to make it so
    in float arithmetic), so the term's largest such factor gives its largest score exactly.
    """
    for q in range(term_ids.shape[0]):
        t = term_ids[q]
        w = np.float32(boosts[q]) * idf[t]
        weights[q] = w
        bounds[q] = w - w / max_tf[t]


def sift_down(heap_s, heap_d, size, s, d):
    """Put ``(s, d)`` at the root of the heap's first ``size`` entries and sift it down to its place."""
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        right = left + 1
        if right < size and (heap_s[right] < heap_s[left] or (heap_s[right] == heap_s[left] and heap_d[right] > heap_d[left])):
            child = right
        if heap_s[child] < s or (heap_s[child] == s and heap_d[child] > d):
            heap_s[i] = heap_s[child]
            heap_d[i] = heap_d[child]
            i = child
        else:
            break
    heap_s[i] = s
    heap_d[i] = d


def heap_push(heap_s, heap_d, size, k, s, d):
    """Offer ``(s, d)`` to a bounded heap of the ``k`` best (worst at the root); return the size."""
    if size < k:
        i = size
        size += 1
    elif s > heap_s[0] or (s == heap_s[0] and d < heap_d[0]):
        sift_down(heap_s, heap_d, size, s, d)  # the new element replaces the worst
        return size
    else:
        return size
    # sift up from the new leaf
    while i > 0:
        parent = (i - 1) // 2
        if heap_s[parent] > s or (heap_s[parent] == s and heap_d[parent] < d):
            heap_s[i] = heap_s[parent]
            heap_d[i] = heap_d[parent]
            i = parent
        else:
            break
    heap_s[i] = s
    heap_d[i] = d
    return size


def kth_best(vals, docs_of, n, k, heap_s, heap_d):
    """The ``k``-th best score (float32) of ``vals[:n]`` (documents ``docs_of[:n]``, n >= k)."""
    size = 0
    for j in range(n):
        size = heap_push(heap_s, heap_d, size, k, np.float32(vals[j]), docs_of[j])
    return heap_s[0]


def gallop(docs, lo, hi, d):
    """First position in ``docs[lo:hi]`` (ascending) holding a document >= ``d`` (``hi``: none)."""
    if lo >= hi or docs[lo] >= d:
        return lo
    step = 1
    while lo + step < hi and docs[lo + step] < d:
        step *= 2
    a = lo + step // 2 + 1
    b = min(lo + step, hi)
    while a < b:  # docs[a - 1] < d; the answer is in [a, b]
        m = (a + b) // 2
        if docs[m] < d:
            a = m + 1
        else:
            b = m
    return a


def search_one(term_ids, boosts, term_ptr, docs, tf, idf, max_tf, k, exhaustive, slot, touched, vals, heap_s, heap_d,
               out):
    """Top ``k`` documents of one query; writes them to ``out`` and returns how many there are.

    Scratch, one entry per document: ``slot`` (int32, all -1 on entry and on return), and
    ``touched`` (int32) and ``vals`` (float64), filled in the order documents are first met:
    ``touched[j]`` is a document in the running, ``vals[j]`` its partial score and ``slot[d]`` its
    ``j``.  ``heap_s`` (float32, k) and ``heap_d`` (int32, k) are scratch too.

    Phase 1 adds whole posting lists, terms in decreasing order of their best score, until the
    best that the remaining terms can add (``rest``) falls below the k-th best partial score
    (``threshold``, a lower bound of the final k-th score since scores only grow).  Phase 2 then
    adds each remaining term only to the documents that can still reach ``threshold``, streaming
    its posting list (or, for a long list and few documents, galloping through it).

    A query whose terms have at most ``exhaustive`` postings in all skips the shortcut: every
    list is added whole (in the same order, so the same sums) and the top ``k`` taken once,
    which is faster than bounding when the lists are short.
    """
    nq = term_ids.shape[0]
    if nq == 0 or k <= 0:
        return 0
    total = 0
    for q in range(nq):
        total += term_ptr[term_ids[q] + 1] - term_ptr[term_ids[q]]
    prune = total > exhaustive
    weights = np.empty(nq, dtype=np.float32)
    bounds = np.empty(nq, dtype=np.float32)
    term_bounds(term_ids, boosts, idf, max_tf, weights, bounds)
    order = np.argsort(-bounds, kind="mergesort")
    # rest[i]: the most that terms order[i:] can add, summed in float64 like a document's score
    # and raised by a relative 2**-40 so that no rounding can make a bound fall short.
    rest = np.zeros(nq + 1, dtype=np.float64)
    for i in range(nq - 1, -1, -1):
        rest[i] = rest[i + 1] + np.float64(bounds[order[i]])
    for i in range(nq):
        rest[i] = rest[i] * _SLACK
    n = 0
    best = 0.0
    threshold = np.float32(-1.0)
    ceiling = np.inf  # an upper bound of the k-th best partial score since it was last computed
    i = 0
    while i < nq:
        q = order[i]
        t = term_ids[q]
        w = weights[q]
        for p in range(term_ptr[t], term_ptr[t + 1]):
            d = docs[p]
            s = np.float64(w - w / tf[p])
            j = slot[d]
            if j < 0:
                slot[d] = n
                touched[n] = d
                vals[n] = s
                n += 1
                a = s
            else:
                a = vals[j] + s
                vals[j] = a
            if a > best:
                best = a
        ceiling += np.float64(bounds[q]) * _SLACK  # no document gained more than the term's best
        i += 1
        # A new document can no longer make the top k once rest < threshold, and the threshold is
        # at most the best partial score and at most the last one computed plus what came since.
        if prune and i < nq and n >= k and np.float32(rest[i]) < np.float32(min(best, ceiling)):
            threshold = kth_best(vals, touched, n, k, heap_s, heap_d)
            ceiling = np.float64(threshold) * _SLACK
            if np.float32(rest[i]) < threshold:
                break
    while i < nq:
        # keep (packed at the front, in order) the documents that can still reach the threshold
        live = 0
        for j in range(n):
            d = touched[j]
            v = vals[j]
            if np.float32(v + rest[i]) < threshold:
                slot[d] = -1
            else:
                if live != j:
                    touched[live] = d
                    vals[live] = v
                    slot[d] = live
                live += 1
        n = live
        q = order[i]
        t = term_ids[q]
        w = weights[q]
        lo = term_ptr[t]
        hi = term_ptr[t + 1]
        if hi - lo <= 32 * n:  # stream the list, updating the documents still in the running
            for p in range(lo, hi):
                j = slot[docs[p]]
                if j >= 0:
                    vals[j] += np.float64(w - w / tf[p])
        else:  # a long list and few documents: gallop through it in document order
            by_doc = np.argsort(touched[:n])
            p = lo
            for m in range(n):
                j = by_doc[m]
                d = touched[j]
                p = gallop(docs, p, hi, d)
                if p == hi:
                    break
                if docs[p] == d:
                    vals[j] += np.float64(w - w / tf[p])
        i += 1
        if i < nq and n >= k:
            threshold = max(threshold, kth_best(vals, touched, n, k, heap_s, heap_d))
    size = 0
    for j in range(n):
        size = heap_push(heap_s, heap_d, size, k, np.float32(vals[j]), touched[j])
        slot[touched[j]] = -1
    # pop the heap from worst to best into out[size-1] .. out[0]
    for j in range(size - 1, -1, -1):
        out[j] = heap_d[0]
        sift_down(heap_s, heap_d, j, heap_s[j], heap_d[j])  # the last entry replaces the popped root
    return size


def search_batch(q_ptr, term_ids, boosts, term_ptr, docs, tf, idf, max_tf, k, exhaustive, slot, touched, vals, out,
                 counts):
    """:func:`search_one` for many queries: query ``i``'s terms are ``q_ptr[i]:q_ptr[i+1]``."""
    heap_s = np.empty(max(k, 1), dtype=np.float32)
    heap_d = np.empty(max(k, 1), dtype=np.int32)
    for i in range(q_ptr.shape[0] - 1):
        a = q_ptr[i]
        b = q_ptr[i + 1]
        counts[i] = search_one(term_ids[a:b], boosts[a:b], term_ptr, docs, tf, idf, max_tf, k, exhaustive, slot, touched,
                               vals, heap_s, heap_d, out[i])


def score_all(term_ids, boosts, term_ptr, docs, freqs, norms, idf, cache, acc):
    """Every document's full score for a query (float64 sums into ``acc``): the tests' reference.

    Computed from the frequencies and norms with Lucene's formula as written, independently of
    the precomputed ``tf`` factors that the kernel uses.
    """
    for q in range(term_ids.shape[0]):
        t = term_ids[q]
        w = np.float32(boosts[q]) * idf[t]
        for p in range(term_ptr[t], term_ptr[t + 1]):
            d = docs[p]
            acc[d] += np.float64(w - w / (_ONE + np.float32(freqs[p]) * cache[norms[d]]))


# --------------------------------------------------------------------------------------------
# Document ranges (:mod:`webshop_gym.search.ranges`): the postings regrouped so that the documents
# of one product type are neighbours, cut into ranges with each term's best factor per range.


def regroup(term_ptr, docs, freqs, tf, idf, new_of_old, range_size, new_docs, new_tf, score1, new_freqs):
    """Each term's postings in the new document order; returns how many (term, range) pairs there are.

    Writes, per posting in the new order: the new document number, its ``tf`` factor and
    frequency, and its score at boost 1 (``idf - idf / tf``, float32, the kernels' own arithmetic).
    """
    entries = 0
    for t in range(term_ptr.shape[0] - 1):
        a = term_ptr[t]
        b = term_ptr[t + 1]
        if a == b:
            continue
        moved = np.empty(b - a, dtype=np.int64)
        for i in range(b - a):
            moved[i] = new_of_old[docs[a + i]]
        by_new = np.argsort(moved)
        w = idf[t]
        last = -1
        for i in range(b - a):
            src = a + by_new[i]
            d = moved[by_new[i]]
            y = tf[src]
            new_docs[a + i] = d
            new_tf[a + i] = y
            new_freqs[a + i] = freqs[src]
            score1[a + i] = w - w / y
            r = d // range_size
            if r != last:
                entries += 1
                last = r
    return entries


def range_entries(term_ptr, new_docs, new_tf, range_size, ent_ptr, ent_range, ent_start, ent_max_tf, sub_end, sub_max_tf,
                  local):
    """Each term's ranges and each posting's place in its range.

    Per (term, range) entry: the range, its first posting, the largest ``tf`` factor;
    per block of ``range_size // sub_end.shape[1]`` documents of the range, the end of its postings
    (relative to the entry's first) and their largest ``tf`` factor (1: none, which bounds a score by 0).
    """
    subs = sub_end.shape[1]
    sub_size = range_size // subs
    e = 0
    for t in range(term_ptr.shape[0] - 1):
        last = -1
        for p in range(term_ptr[t], term_ptr[t + 1]):
            d = new_docs[p]
            r = d // range_size
            if r != last:
                ent_range[e] = r
                ent_start[e] = p
                ent_max_tf[e] = _ONE
                for j in range(subs):
                    sub_end[e, j] = 0
                    sub_max_tf[e, j] = _ONE
                e += 1
                last = r
            x = d - r * range_size
            j = x // sub_size
            y = new_tf[p]
            if y > ent_max_tf[e - 1]:
                ent_max_tf[e - 1] = y
            if y > sub_max_tf[e - 1, j]:
                sub_max_tf[e - 1, j] = y
            for i in range(j, subs):
                sub_end[e - 1, i] += 1
            local[p] = x
        ent_ptr[t + 1] = e


def find_entry(ent_range, lo, hi, r):
    """The entry of range ``r`` among ``ent_range[lo:hi]`` (ascending), or -1 when the term is not in it."""
    end = hi
    while lo < hi:
        m = (lo + hi) // 2
        if ent_range[m] < r:
            lo = m + 1
        else:
            hi = m
    if lo < end and ent_range[lo] == r:
        return lo
    return -1


def score_range(r, range_size, nq, order, term_ids, weights, unit, ent_ptr, ent_range, ent_start, sub_end, sub_max_tf,
                local, score1, freqs, norms, cache, old_of_new, acc, found, sub_ub, k, heap_s, heap_d, size):
    """Score the documents of range ``r`` that can reach the heap and offer each to it; return the heap's size.

    Once the heap holds ``k`` documents, a block of the range whose bound (its terms' best scores
    summed as a document's are) falls below the k-th best is skipped.  Terms are added in ``order``
    (each document's float64 sum in the same order as :func:`search_one`), a posting at boost 1
    from its stored score, at another boost as ``w - w / tf`` with ``tf`` recomputed from its
    frequency and its document's norm exactly as :func:`tf_factors` does.  Scratch: ``acc``
    (float64, ``range_size``, all zero on entry and on return), ``found`` (int64, one per term),
    ``sub_ub`` (float64, one per block).
    """
    base = r * range_size
    subs = sub_end.shape[1]
    sub_size = range_size // subs
    for i in range(nq):
        t = term_ids[order[i]]
        found[i] = find_entry(ent_range, ent_ptr[t], ent_ptr[t + 1], r)
    full = size < k
    if not full:
        for j in range(subs):
            sub_ub[j] = 0.0
        for i in range(nq):
            e = found[i]
            if e >= 0:
                w = weights[order[i]]
                for j in range(subs):
                    sub_ub[j] += np.float64(w - w / sub_max_tf[e, j])
    threshold = heap_s[0]
    for j in range(subs):
        if not full and np.float32(sub_ub[j] * _SLACK) < threshold:
            continue
        for i in range(nq):
            e = found[i]
            if e < 0:
                continue
            lo = ent_start[e] + (sub_end[e, j - 1] if j > 0 else 0)
            hi = ent_start[e] + sub_end[e, j]
            q = order[i]
            if unit[q]:
                for p in range(lo, hi):
                    acc[local[p]] += np.float64(score1[p])
            else:
                w = weights[q]
                for p in range(lo, hi):
                    y = _ONE + np.float32(freqs[p]) * cache[norms[old_of_new[base + local[p]]]]
                    acc[local[p]] += np.float64(w - w / y)
        for x in range(j * sub_size, (j + 1) * sub_size):
            a = acc[x]
            if a > 0.0:
                acc[x] = 0.0
                size = heap_push(heap_s, heap_d, size, k, np.float32(a), old_of_new[base + x])
    return size


def search_ranges_one(term_ids, boosts, idf, max_tf, norms, cache, old_of_new, local, score1, freqs, ent_ptr, ent_range,
                      ent_start, ent_max_tf, sub_end, sub_max_tf, range_size, k, ub, acc, sub_ub, heap_s, heap_d, out,
                      scored):
    """Top ``k`` documents of one query over document ranges; the same result as :func:`search_one`.

    Each range's bound is the float64 sum, in the order the documents' scores are summed, of each
    query term's best score in that range: a sum of terms each at least a document's own, so by
    monotonic rounding at least that document's score.  The ``SEEDS`` ranges of highest bound are
    scored first (a first k-th best score), then every range whose bound can still reach the k-th
    best, highest bound first, until the next bound falls below it; ``scored[0]`` counts the ranges
    scored in full.  Scratch: ``ub`` (float64, one
    per range, all zero on entry and on return), ``acc`` (float64, ``range_size``, all zero).
    """
    nq = term_ids.shape[0]
    if nq == 0 or k <= 0:
        return 0
    nr = ub.shape[0]
    weights = np.empty(nq, dtype=np.float32)
    bounds = np.empty(nq, dtype=np.float32)
    term_bounds(term_ids, boosts, idf, max_tf, weights, bounds)
    order = np.argsort(-bounds, kind="mergesort")
    found = np.empty(nq, dtype=np.int64)
    unit = np.empty(nq, dtype=np.bool_)
    for q in range(nq):
        unit[q] = boosts[q] == 1.0
    for i in range(nq):
        q = order[i]
        t = term_ids[q]
        w = weights[q]
        for e in range(ent_ptr[t], ent_ptr[t + 1]):
            ub[ent_range[e]] += np.float64(w - w / ent_max_tf[e])
    # the SEEDS ranges of highest bound (kept sorted, lowest first), scored first
    seed_ub = np.full(SEEDS, -1.0)
    seed_r = np.full(SEEDS, -1, dtype=np.int64)
    for r in range(nr):
        u = ub[r]
        if u > seed_ub[0]:
            seed_ub[0] = u
            seed_r[0] = r
            for j in range(1, SEEDS):
                if seed_ub[j] >= seed_ub[j - 1]:
                    break
                seed_ub[j], seed_ub[j - 1] = seed_ub[j - 1], seed_ub[j]
                seed_r[j], seed_r[j - 1] = seed_r[j - 1], seed_r[j]
    size = 0
    for j in range(SEEDS - 1, -1, -1):
        r = seed_r[j]
        if r >= 0 and seed_ub[j] > 0.0:
            size = score_range(r, range_size, nq, order, term_ids, weights, unit, ent_ptr, ent_range, ent_start, sub_end,
                               sub_max_tf, local, score1, freqs, norms, cache, old_of_new, acc, found, sub_ub, k, heap_s,
                               heap_d, size)
            scored[0] += 1
            ub[r] = 0.0
    # every other range that can still reach the k-th best, highest bound first
    live = np.empty(nr, dtype=np.int64)
    n = 0
    for r in range(nr):
        u = ub[r]
        if u > 0.0:
            if size < k or np.float32(u * _SLACK) >= heap_s[0]:
                live[n] = r
                n += 1
            else:
                ub[r] = 0.0
    keys = np.empty(n, dtype=np.float64)
    for j in range(n):
        keys[j] = -ub[live[j]]
    by_bound = np.argsort(keys)
    for j in range(n):
        r = live[by_bound[j]]
        if size < k or np.float32(ub[r] * _SLACK) >= heap_s[0]:
            size = score_range(r, range_size, nq, order, term_ids, weights, unit, ent_ptr, ent_range, ent_start, sub_end,
                               sub_max_tf, local, score1, freqs, norms, cache, old_of_new, acc, found, sub_ub, k, heap_s,
                               heap_d, size)
            scored[0] += 1
        ub[r] = 0.0
    # pop the heap from worst to best into out[size-1] .. out[0]
    for j in range(size - 1, -1, -1):
        out[j] = heap_d[0]
        sift_down(heap_s, heap_d, j, heap_s[j], heap_d[j])
    return size


def search_ranges_batch(q_ptr, term_ids, boosts, idf, max_tf, norms, cache, old_of_new, local, score1, freqs, ent_ptr,
                        ent_range, ent_start, ent_max_tf, sub_end, sub_max_tf, range_size, k, out, counts, scored):
    """:func:`search_ranges_one` for many queries: query ``i``'s terms are ``q_ptr[i]:q_ptr[i+1]``.

    ``scored[i]``: how many ranges query ``i`` scored in full (the rest were skipped by their bound).
    """
    nr = (old_of_new.shape[0] + range_size - 1) // range_size
    ub = np.zeros(nr, dtype=np.float64)
    acc = np.zeros(range_size, dtype=np.float64)
    sub_ub = np.zeros(sub_end.shape[1], dtype=np.float64)
    heap_s = np.empty(max(k, 1), dtype=np.float32)
    heap_d = np.empty(max(k, 1), dtype=np.int32)
    for i in range(q_ptr.shape[0] - 1):
        a = q_ptr[i]
        b = q_ptr[i + 1]
        counts[i] = search_ranges_one(term_ids[a:b], boosts[a:b], idf, max_tf, norms, cache, old_of_new, local, score1, freqs,
                                      ent_ptr, ent_range, ent_start, ent_max_tf, sub_end, sub_max_tf, range_size, k, ub, acc,
                                      sub_ub, heap_s, heap_d, out[i], scored[i:i + 1])


# --------------------------------------------------------------------------------------------
# Compiled bindings.


tf_factors_jit = _jit(tf_factors)
term_bounds_jit = _jit(term_bounds)
sift_down_jit = _jit(sift_down)
heap_push_jit = _jit(_rebind(heap_push, sift_down=sift_down_jit))
kth_best_jit = _jit(_rebind(kth_best, heap_push=heap_push_jit))
gallop_jit = _jit(gallop)
search_one_jit = _jit(_rebind(search_one, term_bounds=term_bounds_jit, heap_push=heap_push_jit, kth_best=kth_best_jit,
                              gallop=gallop_jit, sift_down=sift_down_jit))
search_batch_jit = _jit(_rebind(search_batch, search_one=search_one_jit))
score_all_jit = _jit(score_all)
regroup_jit = _jit(regroup)
range_entries_jit = _jit(range_entries)
find_entry_jit = _jit(find_entry)
score_range_jit = _jit(_rebind(score_range, find_entry=find_entry_jit, heap_push=heap_push_jit))
search_ranges_one_jit = _jit(_rebind(search_ranges_one, term_bounds=term_bounds_jit, score_range=score_range_jit,
                                     sift_down=sift_down_jit))
search_ranges_batch_jit = _jit(_rebind(search_ranges_batch, search_ranges_one=search_ranges_one_jit))
