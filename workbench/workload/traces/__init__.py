"""Cache traces read and written as streams: libCacheSim's oracleGeneral, Twitter's
Twemcache CSV and a plain CSV, each plain or zstd-compressed (``.zst``).

`formats` names them; `records.Request` is the one record every format reads into.
"""
