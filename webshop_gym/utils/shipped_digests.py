"""The size and SHA-256 of every data file the package ships and checks before use.

Written by ``webshop_gym.search.release.write_pins()`` (docs/release.md, step 1): never edit by hand.
Checked by :mod:`webshop_gym.utils.shipped` (the search postings when they are installed, the goal-id
lists when they are read, both by ``webshop-gym data verify``).
"""

SEARCH_POSTINGS_FOR = ('270d81419078ea88efce516a', 'postings-v2-analysis-v1')
"""The catalog key and the postings folder's name the shipped postings were exported for."""

SEARCH_POSTINGS = {
    'doc_rows.npy': (4128, '4e62bae4f627a8543dcdc4b88d7baeb98707128ecee04b25aa592fb7618cd42b'),
    'docs.npy': (207412, '4c200d76d34b3dcd6537bf4864e218c4628da1108d7aa3990988b9468ca19250'),
    'freqs.npy': (51949, '339fb62af9b27406476d025abbe0a61199affc801052b1882d82ef3823fb5d2f'),
    'idf.npy': (6932, '300be30c92ca581fe75e0e57853a841fcdbf3811a38add3ae033976d9d75dd28'),
    'max_tf.npy': (6932, '47c2d47a4df40599137913033cd93892d897101861908b1dd7a4c7c02bec6cc4'),
    'meta.json': (328, '83da1ab0eb1c254df8c4df4c5a515d4d147cb8ad07994bc014d5d7a76bb42fc8'),
    'norms.npy': (1128, '9998ea82eab7faeca4e80027fc0225e0cda53f2916d9e7f0924eae0499f16e64'),
    'source.json': (249, '27b5c0b9bb7cd8c5412ca22fd9d418981f0e1a19e5af89d7bcacf371e65fae4c'),
    'term_ptr.npy': (13744, '3b338a996a0f15c9ae54270a5de661dc81555224e8e462377dc1d0cb4c6971d0'),
    'terms.txt': (10888, '3073fb7d06961c8e02b8b21694fbf589d6a77f569ae905cdb4628a2b08f050cb'),
    'tf.npy': (207412, '78aa9fbc3fc206c5ea5b5bf18cd0a00fbf9afca4eacdcef6e6d9b3656e79582a'),
}
"""``data/search-postings/`` (``webshop_gym/embedded/search-postings/`` in a wheel): file -> (bytes, SHA-256)."""

ID_LISTS = {
    'agentgym-test-10.json': (623, '2c03d0e180d65c1326e245bc5b34d8a896754d52e242ac9810416f28bdd989e3'),
    'agentgym-test.json': (1800, '0024e57681f08755d1900968165d4584345739311bcb2b2608ec779bed5c3fee'),
    'eto-test-500.json': (3640, 'ed8972782fd949b7741dd30569c8e8f1a96233a7052801115c765a48b15d9bb2'),
    'eto-test.json': (1780, 'c4b769e4b5160aa415545321cc6a9654d441c1384c87694693bcabb06ca07cb5'),
    'eto-train.json': (11353, '8f14f5f52c9123df04228fd375cad677441491df273b7da72cd00b73e9d062f8'),
    'ipr-test.json': (1754, 'ad5cfe65870a9a9f40397fae7fe80497bbe9dab4abf07e06fbaefd004f4cbeb7'),
    'ipr-train.json': (10072, 'bf7d99f934315b31474933dd65afeeca02d4a0a3f036a0a57f9ed7b9252c789e'),
}
"""``webshop_gym/protocols/data/ids/``: file -> (bytes, SHA-256)."""
