"""The spec's reference checksums (profiles=10_000, queries=post_queries=2_500, seed 570123434)."""

REFERENCE_SEED = 570123434
REFERENCE_PROFILES = 10_000
REFERENCE_QUERIES = 2_500

REFERENCE_CHECKSUMS: dict[str, str] = {
    "insert profiles": "C8DE164958C41D95",
    "read by user id": "AFB36D4CF3228B79",
    "lookup by email": "DA1A90580C0E5063",
    "scan country/status index": "20D7BD5CED724746",
    "query country/status": "516B143C2712D931",
    "scan created-at index": "D7A9D01BD28F53BD",
    "query created-at range": "972D0CF55FF89D52",
    "scan top reputation index": "598C3BBF2DF6BFAD",
    "query top reputation": "86F13F5AED34AF65",
    "update profiles": "0B1F7C8B4073B772",
    "post-update read by user id": "94982268C9E58E93",
    "post-update lookup by email": "0B0B2CAE8C9D6652",
    "post-update scan country/status index": "B849056F7D3FA627",
    "post-update query country/status": "CE7B98E91B2CBA37",
    "post-update scan top reputation index": "EF482197014EF61D",
    "post-update query top reputation": "763E0452ABBB34E9",
    "final (verify)": "CD5660C291BB91B3",
}
