"""Numba kernels of the reward, each beside its pure-Python twin.

One of the two kernel modules (the other is :mod:`webshop_gym.search._kernels`; both compile
through :mod:`webshop_gym.utils.jit`, the only module that imports numba).  Every function below is
written once, as plain Python over numpy arrays (the *twin*, used by tests and for reading), and
compiled with ``numba.njit(cache=True, nogil=True)`` into a ``*_jit`` binding;
:mod:`webshop_gym.reward` calls ``score_range_jit`` through its entry point
(:func:`score_range_entry`), not through numba's dispatcher.
Compiled kernels land in numba's on-disk cache, so a new process does not pay the JIT again.

Array conventions (see :mod:`webshop_gym.reward.tables`): a ragged field is an ``offsets``
array (``int64``, one longer than the number of rows) plus a flat ``values`` array; text for
substring tests is UTF-8 bytes (``uint8``) with ``int64`` offsets; fuzzy strings are ids into a
:class:`~webshop_gym.data.fuzz.FuzzTable` (``str_off``/``str_tok``: sorted token ids per
string; ``tok_off``/``tok_cp``: code points per token).
"""

from __future__ import annotations

import numpy as np

from webshop_gym.utils.jit import entry_point as _entry_point
from webshop_gym.utils.jit import jit as _jit
from webshop_gym.utils.jit import rebind as _rebind

FUZZY_THRESHOLD = 85.0


def lcs_length(a, na, b, nb, row):
    """Length of the longest common subsequence of ``a[:na]`` and ``b[:nb]`` (``row``: scratch)."""
    if na == 0 or nb == 0:
        return 0
    for j in range(nb + 1):
        row[j] = 0
    for i in range(na):
        diag = 0
        ai = a[i]
        for j in range(nb):
            up = row[j + 1]
            if ai == b[j]:
                row[j + 1] = diag + 1
            elif row[j] > up:
                row[j + 1] = row[j]
            diag = up
    return row[nb]


def split_tokens(s1, s2, tok_off, tok_cp, str_off, str_tok, buf1, buf2):
    """Token-set parts of two fuzz strings.

    Writes the sorted tokens only in ``s1`` (joined by spaces) to ``buf1`` and those only in
    ``s2`` to ``buf2``; returns ``(n_inter, sect_chars, ab_len, n_ab, ba_len, n_ba)``.
    """
    a0, a1 = str_off[s1], str_off[s1 + 1]
    b0, b1 = str_off[s2], str_off[s2 + 1]
    n_inter = 0
    sect_chars = 0
    ab_len = 0
    n_ab = 0
    for i in range(a0, a1):
        t = str_tok[i]
        common = False
        for j in range(b0, b1):
            if str_tok[j] == t:
                common = True
                break
        if common:
            n_inter += 1
            sect_chars += tok_off[t + 1] - tok_off[t]
        else:
            if n_ab > 0:
                buf1[ab_len] = 32
                ab_len += 1
            for k in range(tok_off[t], tok_off[t + 1]):
                buf1[ab_len] = tok_cp[k]
                ab_len += 1
            n_ab += 1
    ba_len = 0
    n_ba = 0
    for j in range(b0, b1):
        t = str_tok[j]
        common = False
        for i in range(a0, a1):
            if str_tok[i] == t:
                common = True
                break
        if not common:
            if n_ba > 0:
                buf2[ba_len] = 32
                ba_len += 1
            for k in range(tok_off[t], tok_off[t + 1]):
                buf2[ba_len] = tok_cp[k]
                ba_len += 1
            n_ba += 1
    return n_inter, sect_chars, ab_len, n_ab, ba_len, n_ba


def token_set_ratio(s1, s2, tok_off, tok_cp, str_off, str_tok, buf1, buf2, row):
    """Rapidfuzz's ``token_set_ratio`` of two processed strings given as fuzz-table ids."""
    if str_off[s1 + 1] == str_off[s1] or str_off[s2 + 1] == str_off[s2]:
        return 0.0
    n_inter, sect_chars, ab_len, n_ab, ba_len, n_ba = split_tokens(
        s1, s2, tok_off, tok_cp, str_off, str_tok, buf1, buf2
    )
    if n_inter > 0 and (n_ab == 0 or n_ba == 0):
        return 100.0
    sect_len = sect_chars + n_inter - 1 if n_inter > 0 else 0
    has_sect = 1 if sect_len != 0 else 0
    sect_ab_len = sect_len + has_sect + ab_len
    sect_ba_len = sect_len + has_sect + ba_len
    dist = ab_len + ba_len - 2 * lcs_length(buf1, ab_len, buf2, ba_len, row)
    lensum = sect_ab_len + sect_ba_len
    result = 100.0 - 100.0 * dist / lensum if lensum else 100.0
    if sect_len == 0:
        return result
    sect_ab_ratio = 100.0 - 100.0 * (has_sect + ab_len) / (sect_len + sect_ab_len)
    sect_ba_ratio = 100.0 - 100.0 * (has_sect + ba_len) / (sect_len + sect_ba_len)
    return max(result, sect_ab_ratio, sect_ba_ratio)


def token_set_match(s1, s2, tok_off, tok_cp, str_off, str_tok, buf1, buf2, row, hist):
    """Whether ``round(token_set_ratio(s1, s2)) > 85`` (the reward's test), with early exits.

    Equal to thresholding :func:`token_set_ratio`: the intersection ratios are exact and cheap;
    the diff-string ratio is bounded above with a character histogram (LCS <= sum of common
    character counts) before the exact LCS is computed.  ``round`` is half-to-even, so the
    test holds exactly when the score is at least 85.5.
    """
    if str_off[s1 + 1] == str_off[s1] or str_off[s2 + 1] == str_off[s2]:
        return False
    n_inter, sect_chars, ab_len, n_ab, ba_len, n_ba = split_tokens(
        s1, s2, tok_off, tok_cp, str_off, str_tok, buf1, buf2
    )
    if n_inter > 0 and (n_ab == 0 or n_ba == 0):
        return True
    sect_len = sect_chars + n_inter - 1 if n_inter > 0 else 0
    has_sect = 1 if sect_len != 0 else 0
    sect_ab_len = sect_len + has_sect + ab_len
    sect_ba_len = sect_len + has_sect + ba_len
    lensum = sect_ab_len + sect_ba_len
    best = 0.0
    if sect_len != 0:
        sect_ab_ratio = 100.0 - 100.0 * (has_sect + ab_len) / (sect_len + sect_ab_len)
        sect_ba_ratio = 100.0 - 100.0 * (has_sect + ba_len) / (sect_len + sect_ba_len)
        best = max(sect_ab_ratio, sect_ba_ratio)
        if np.rint(best) > FUZZY_THRESHOLD:
            return True
    if lensum == 0:
        return np.rint(100.0) > FUZZY_THRESHOLD
    # Upper bound of the diff-string ratio: LCS is at most the common character count.
    for k in range(256):
        hist[k] = 0
    ascii_only = True
    for k in range(ab_len):
        c = buf1[k]
        if c >= 256:
            ascii_only = False
            break
        hist[c] += 1
    common = min(ab_len, ba_len)
    if ascii_only:
        common = 0
        for k in range(ba_len):
            c = buf2[k]
            if c >= 256:
                common = min(ab_len, ba_len)
                break
            if hist[c] > 0:
                hist[c] -= 1
                common += 1
    upper = 100.0 - 100.0 * (ab_len + ba_len - 2 * common) / lensum
    if max(upper, best) < 85.5:
        return False
    dist = ab_len + ba_len - 2 * lcs_length(buf1, ab_len, buf2, ba_len, row)
    result = 100.0 - 100.0 * dist / lensum
    return np.rint(max(result, best)) > FUZZY_THRESHOLD


def contains(hay, h0, h1, needle, n0, n1):
    """Whether bytes ``needle[n0:n1]`` occur in ``hay[h0:h1]`` (the empty needle always does)."""
    m = n1 - n0
    if m == 0:
        return True
    last = h1 - m
    first = needle[n0]
    for i in range(h0, last + 1):
        if hay[i] == first:
            k = 1
            while k < m and hay[i + k] == needle[n0 + k]:
                k += 1
            if k == m:
                return True
    return False


def count_common(x, x0, x1, y, y0, y1):
    """Number of equal values in two sorted, duplicate-free slices."""
    i, j, n = x0, y0, 0
    while i < x1 and j < y1:
        if x[i] == y[j]:
            n += 1
            i += 1
            j += 1
        elif x[i] < y[j]:
            i += 1
        else:
            j += 1
    return n


def score_range(
    start, stop,
    # fuzz table
    tok_off, tok_cp, str_off, str_tok, max_joined,
    # products
    p_query, p_pcat, pc_off, pc_val,
    # title nouns, one row per purchase of the batch: the purchased title's (pn_off/pn_val), the
    # goal's (gn_off/gn_val) and its number of noun tokens (gn_count), tagged on first use
    pn_off, pn_val, gn_off, gn_val, gn_count,
    pa_off, pa_fz, title_data, title_off, bul_data, bul_off, desc_data, desc_off,
    # goals
    g_query, gp_off, gp_val, ga_off, ga_fz, ga_data, ga_soff,
    go_off, go_fz, g_upper,
    # the batch
    b_goal, b_row, bs_off, bs_fz, b_price,
    # outputs
    total, r_type, r_att, w_att, title_score, r_option, w_option, w_price,
    query_match, category_match, r_price, n_att, n_opt,
):  # fmt: skip
    """Score purchases ``start`` to ``stop`` of a batch (goal, product row, selected values, price).

    :class:`webshop_gym.reward.RewardModel` calls it for a whole batch (``0, len(b_goal)``) through
    its entry point, without numba's per-call typing.  (A parallel ``prange`` version over chunks
    measured no faster on 2 cores, so there is none.)
    """
    buf1 = np.empty(max_joined + 1, dtype=np.int32)
    buf2 = np.empty(max_joined + 1, dtype=np.int32)
    row_buf = np.empty(max_joined + 2, dtype=np.int32)
    hist = np.zeros(256, dtype=np.int32)
    for b in range(start, stop):
        g = b_goal[b]
        p = b_row[b]
        # type factor
        qm = p_query[p] == g_query[g]
        pc = p_pcat[p]
        common_parts = count_common(pc_val, pc_off[pc], pc_off[pc + 1], gp_val, gp_off[g], gp_off[g + 1])
        cm = common_parts >= 2
        if gn_count[b] == 0:
            ts = 0.2
        else:
            common = count_common(pn_val, pn_off[b], pn_off[b + 1], gn_val, gn_off[b], gn_off[b + 1])
            ts = common / gn_count[b]
        rt = 1.0
        if not (qm or cm or ts > 0.2):
            rt = 0.5
        if ts < 0.1:
            rt = 0.1
        if ts == 0.0:
            rt = 0.0
        # attributes
        na = 0
        for k in range(ga_off[g], ga_off[g + 1]):
            matched = False
            for j in range(pa_off[p], pa_off[p + 1]):
                if token_set_match(pa_fz[j], ga_fz[k], tok_off, tok_cp, str_off, str_tok, buf1, buf2, row_buf, hist):
                    matched = True
                    break
            if not matched:
                n0, n1 = ga_soff[k], ga_soff[k + 1]
                if (
                    contains(title_data, title_off[p], title_off[p + 1], ga_data, n0, n1)
                    or contains(bul_data, bul_off[p], bul_off[p + 1], ga_data, n0, n1)
                    or contains(desc_data, desc_off[p], desc_off[p + 1], ga_data, n0, n1)
                ):
                    matched = True
            if matched:
                na += 1
        # options
        no = 0
        for k in range(go_off[g], go_off[g + 1]):
            for j in range(bs_off[b], bs_off[b + 1]):
                if token_set_match(bs_fz[j], go_fz[k], tok_off, tok_cp, str_off, str_tok, buf1, buf2, row_buf, hist):
                    no += 1
                    break
        n_goal_attrs = ga_off[g + 1] - ga_off[g]
        n_goal_opts = go_off[g + 1] - go_off[g]
        denominator = n_goal_attrs + n_goal_opts + 1
        rp = b_price[b] <= g_upper[g]
        total[b] = (na + no + (1 if rp else 0)) / denominator * rt
        r_type[b] = rt
        r_att[b] = na / n_goal_attrs
        w_att[b] = n_goal_attrs / denominator
        title_score[b] = ts
        if n_goal_opts > 0:
            r_option[b] = no / n_goal_opts
            w_option[b] = n_goal_opts / denominator
        else:
            r_option[b] = np.nan
            w_option[b] = np.nan
        w_price[b] = 1 / denominator
        query_match[b] = qm
        category_match[b] = cm
        r_price[b] = rp
        n_att[b] = na
        n_opt[b] = no


def fuzzy_pairs(tok_off, tok_cp, str_off, str_tok, max_joined, left, right, out, matches):
    """Raw ``token_set_ratio`` scores and the reward's match test for many fuzz-string pairs."""
    buf1 = np.empty(max_joined + 1, dtype=np.int32)
    buf2 = np.empty(max_joined + 1, dtype=np.int32)
    row_buf = np.empty(max_joined + 2, dtype=np.int32)
    hist = np.zeros(256, dtype=np.int32)
    for i in range(left.shape[0]):
        out[i] = token_set_ratio(left[i], right[i], tok_off, tok_cp, str_off, str_tok, buf1, buf2, row_buf)
        matches[i] = token_set_match(left[i], right[i], tok_off, tok_cp, str_off, str_tok, buf1, buf2, row_buf, hist)


# --------------------------------------------------------------------------------------------
# Compiled bindings: the same functions, compiled, each calling the compiled helpers.


lcs_length_jit = _jit(lcs_length)
contains_jit = _jit(contains)
count_common_jit = _jit(count_common)
split_tokens_jit = _jit(split_tokens)
token_set_ratio_jit = _jit(_rebind(token_set_ratio, lcs_length=lcs_length_jit, split_tokens=split_tokens_jit))
token_set_match_jit = _jit(_rebind(token_set_match, lcs_length=lcs_length_jit, split_tokens=split_tokens_jit))
score_range_jit = _jit(
    _rebind(
        score_range,
        token_set_match=token_set_match_jit,
        contains=contains_jit,
        count_common=count_common_jit,
    )
)
fuzzy_pairs_jit = _jit(
    _rebind(fuzzy_pairs, token_set_ratio=token_set_ratio_jit, token_set_match=token_set_match_jit)
)


def score_range_entry(args):
    """The compiled :func:`score_range` for the types of ``args``, called without numba's per-call typing."""
    return _entry_point(score_range_jit, args)
