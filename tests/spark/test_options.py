"""The rocketmq data source's options, checked without Spark."""

from __future__ import annotations

import pytest

from rocketmq_actors.protocol.compression import CompressionType
from rocketmq_actors.spark.options import OptionError, SinkOptions

BASE = {"namesrv": "127.0.0.1:9876"}


def test_defaults_and_case_insensitive_names() -> None:
    options = SinkOptions.parse({**BASE, "ChunkSize": "64", "SENDTIMEOUT": "1.5"})
    assert (options.chunk_size, options.send_timeout) == (64, 1.5)
    assert (options.max_chunks, options.batch_size, options.retry_times) == (4, 32, 2)
    assert options.fail_on_error and not options.tls and options.log_level == "WARNING"
    assert SinkOptions.parse({**BASE, "retryTimes": "0"}).retry_times == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"chunkSize": "many"}, "must be a number"),
        ({"chunkSize": "0"}, "at least 1"),
        ({"sendTimeout": "0"}, "at least 0.001"),
        ({"retryTimes": "-1"}, "at least 0"),
        ({"failOnError": "yes"}, "true or false"),
        ({"logLevel": "loud"}, "logLevel"),
        ({"group": "bad group!"}, "group"),
        ({"namesrv": "nohostport"}, "host:port"),
    ],
)
def test_bad_values_are_refused(extra: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        SinkOptions.parse({**BASE, **extra})


def test_acl_credentials_reach_the_producer_and_stay_out_of_repr() -> None:
    options = SinkOptions.parse({**BASE, "accessKey": "ak", "secretKey": "sk-hidden"})
    creds = options.producer_options()["client"].credentials
    assert (creds.access_key, creds.secret_key) == ("ak", "sk-hidden")
    assert "sk-hidden" not in repr(options) and "sk-hidden" not in repr(creds)
    assert SinkOptions.parse(BASE).producer_options()["client"].credentials is None
    with pytest.raises(OptionError, match="both"):
        SinkOptions.parse({**BASE, "secretKey": "sk"})


def test_compression_options_reach_the_producer() -> None:
    defaults = SinkOptions.parse(BASE).producer_options()["options"]
    assert (defaults.compress_type, defaults.compress_level,
            defaults.compress_threshold) == (CompressionType.ZLIB, 5, 4096)  # fmt: skip
    options = SinkOptions.parse(
        {**BASE, "compressType": "zstd", "compressLevel": "19", "COMPRESSTHRESHOLD": "100"}
    ).producer_options()["options"]
    assert (options.compress_type, options.compress_level,
            options.compress_threshold) == (CompressionType.ZSTD, 19, 100)  # fmt: skip
    lz4 = SinkOptions.parse({**BASE, "compressType": "LZ4", "compressThreshold": "0"})
    assert (lz4.compress_type, lz4.compress_threshold) == (CompressionType.LZ4, 0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"compressType": "gzip"}, "'compressType' must be ZLIB, LZ4 or ZSTD, not 'gzip'"),
        ({"compressLevel": "10"}, "'compressLevel' must be at most 9 for ZLIB"),
        ({"compressType": "ZSTD", "compressLevel": "23"}, "at most 22 for ZSTD"),
        ({"compressLevel": "-1"}, "'compressLevel' must be at least 0"),
        ({"compressThreshold": "big"}, "'compressThreshold' must be a number"),
        ({"compressThreshold": "-1"}, "'compressThreshold' must be at least 0"),
        ({"compresType": "LZ4"}, r"unknown option.*'comprestype'"),
    ],
)
def test_bad_compression_options_are_refused(extra: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        SinkOptions.parse({**BASE, **extra})
