#!/usr/bin/env python3
"""A reference consumer of msgx's topics, written only from docs/events.md and docs/contract.

It uses librdkafka (confluent-kafka) and the jsonschema package, nothing of msgx. It reads the
state, changes and heartbeat topics from their start to their end with
isolation.level=read_committed, validates every record against the JSON Schemas of
docs/contract (key, headers, value), stops on a schema_version it does not know, applies the
documented dedup rule (per FLID keep the highest state_version; drop a record whose
(flid, state_version) was processed; on the state topic drop any state_version not above the
one held), and rebuilds the flight table from the compacted state topic (a tombstone removes the
flight). It prints one JSON document: the rebuilt table and what it counted.

With --watch-heartbeat it reads only the heartbeat topic, from its end, as it is written, and
applies docs/events.md's heartbeat rule: it prints one JSON line when it is reading ({"ready":
true}), one per heartbeat (the time since the previous one, as read and by the records' time
fields, and "quiet" when nothing waits in msgx or "sending" otherwise), and, once no heartbeat
came for three periods, a last line with the verdict "stalled", the silence, the intervals read
and the observed period (their median); then it exits.

Exit 0: read and rebuilt (watching: stalled declared); 1: a record broke the contract (named on
stderr); 2: bad arguments or Kafka failed (watching: no heartbeat within --first-within).
"""

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime

import jsonschema
from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition

KNOWN_SCHEMA_VERSION = "1"


class ContractError(Exception):
    """A record that does not follow the contract."""


def load_schemas(directory):
    def load(name):
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema, format_checker=cls.FORMAT_CHECKER)

    return {
        "key": load("msgx.record.key.schema.json"),
        "headers": load("msgx.record.headers.schema.json"),
        "changes": load("msgx.flight.changes.value.schema.json"),
        "state": load("msgx.flight.state.value.schema.json"),
        "heartbeat": load("msgx.heartbeat.value.schema.json"),
    }


def check(validator, instance, what):
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = "/".join(str(p) for p in e.absolute_path)
        raise ContractError(f"{what}: {e.message} (at /{path})")


def headers_of(msg, where):
    out = {}
    for key, value in msg.headers() or []:
        if key in out:
            raise ContractError(f"{where}: header {key} repeated")
        out[key] = value.decode("utf-8") if value is not None else None
    return out


def partitions_of(consumer, topic):
    """The partitions of topic, sorted; a topic that does not exist is a Kafka failure."""
    meta = consumer.list_topics(topic, timeout=30)
    tmeta = meta.topics.get(topic)
    if tmeta is None or tmeta.error is not None:
        raise KafkaException(tmeta.error if tmeta is not None else f"topic {topic} missing")
    return sorted(tmeta.partitions)


def read_topic(config, topic, handle):
    """Reads every partition of topic from its start to its end (the last stable offset for a
    read_committed consumer) and calls handle(msg) for each record in partition order."""
    consumer = Consumer(config)
    try:
        partitions = partitions_of(consumer, topic)
        parts = [TopicPartition(topic, p, 0) for p in partitions]
        ends = {}
        for tp in parts:
            _, high = consumer.get_watermark_offsets(tp, timeout=30)
            ends[tp.partition] = high
        pending = {p for p, high in ends.items() if high > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in pending])
        while pending:
            msg = consumer.poll(timeout=30)
            if msg is None:
                raise KafkaException(f"{topic}: no record within 30 s, partitions {sorted(pending)} not read to their end")
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                    continue
                raise KafkaException(msg.error())
            handle(msg)
            if msg.offset() + 1 >= ends[msg.partition()]:
                pending.discard(msg.partition())
    finally:
        consumer.close()


# docs/events.md, "Heartbeat": stalled after this many periods without a heartbeat.
STALLED_PERIODS = 3


def emit(doc):
    print(json.dumps(doc, sort_keys=True), flush=True)


def parse_time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def heartbeat_value(msg, schemas):
    """The value of a heartbeat record, checked against the contract."""
    where = f"{msg.topic()}/{msg.partition()}@{msg.offset()}"
    headers = headers_of(msg, where)
    if headers.get("schema_version") != KNOWN_SCHEMA_VERSION:
        raise ContractError(f"{where}: schema_version {headers.get('schema_version')!r} is not one this consumer knows: stop")
    value = json.loads(msg.value())
    check(schemas["heartbeat"], value, f"{where} value")
    return value


def watch_heartbeat(config, topic, schemas, first_within):
    """Tails topic and applies the heartbeat rule until it declares msgx stalled."""
    consumer = Consumer(config)
    try:
        partitions = partitions_of(consumer, topic)
        consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in partitions])
        emit({"ready": True})
        began = time.monotonic()
        last_read = last_time = period = None
        intervals, time_intervals = [], []
        while True:
            tick = 0.1 if period is None else min(0.1, period / 10)
            msg = consumer.poll(timeout=tick)
            now = time.monotonic()
            if msg is not None and msg.error() is None:
                value = heartbeat_value(msg, schemas)
                beat_time = parse_time(value["time"])
                line = {"beat": len(intervals) + 1 if last_read is not None else 0, "period_seconds": value["period_seconds"],
                        "state": "quiet" if value["changes"]["oldest_unsent_event_id"] is None
                        and value["state"]["oldest_unsent_event_id"] is None else "sending"}
                if last_read is not None:
                    intervals.append(now - last_read)
                    time_intervals.append((beat_time - last_time).total_seconds())
                    line["interval_seconds"], line["time_interval_seconds"] = intervals[-1], time_intervals[-1]
                last_read, last_time, period = now, beat_time, value["period_seconds"]
                emit(line)
            elif msg is not None and msg.error().code() != KafkaError._PARTITION_EOF:
                raise KafkaException(msg.error())
            if last_read is None:
                if now - began > first_within:
                    raise KafkaException(f"{topic}: no heartbeat within {first_within} s")
                continue
            if now - last_read > STALLED_PERIODS * period:
                emit({"verdict": "stalled", "silent_seconds": now - last_read, "period_seconds": period,
                      "intervals_seconds": intervals, "time_intervals_seconds": time_intervals,
                      "observed_period_seconds": statistics.median(intervals) if intervals else None})
                return
    finally:
        consumer.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--schemas", required=True, help="the docs/contract directory")
    ap.add_argument("--changes-topic", default="msgx.flight.changes")
    ap.add_argument("--state-topic", default="msgx.flight.state")
    ap.add_argument("--heartbeat-topic", default="msgx.heartbeat")
    ap.add_argument("--ca-file", help="TLS: the brokers' CA (PEM)")
    ap.add_argument("--sasl-mechanism", help="e.g. SCRAM-SHA-512")
    ap.add_argument("--sasl-user")
    ap.add_argument("--sasl-password-env", help="the environment variable holding the SASL password")
    ap.add_argument("--watch-heartbeat", action="store_true", help="tail the heartbeat topic until msgx is stalled")
    ap.add_argument("--first-within", type=float, default=60, help="watching: seconds to wait for the first heartbeat")
    args = ap.parse_args()

    config = {
        "bootstrap.servers": args.brokers,
        "group.id": "msgx-reference-consumer",  # assign() is used: the group commits nothing
        "enable.auto.commit": False,
        "isolation.level": "read_committed",  # docs/events.md: required
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    }
    if args.ca_file or args.sasl_mechanism:
        config["security.protocol"] = ("SASL_SSL" if args.ca_file else "SASL_PLAINTEXT") if args.sasl_mechanism else "SSL"
        if args.ca_file:
            config["ssl.ca.location"] = args.ca_file
        if args.sasl_mechanism:
            config["sasl.mechanism"] = args.sasl_mechanism
            config["sasl.username"] = args.sasl_user
            config["sasl.password"] = os.environ.get(args.sasl_password_env or "", "")

    schemas = load_schemas(args.schemas)
    table = {}  # FLID → the flight's state value (UPSERT), rebuilt from the state topic
    held = {}  # FLID → highest state_version processed on the state topic
    seen_changes = set()  # (flid, state_version) processed on the changes topic
    counts = {"state_records": 0, "state_dropped": 0, "changes_records": 0, "changes_dropped": 0, "heartbeats": 0}
    last_beat = None

    def event_record(msg, topic_kind):
        where = f"{msg.topic()}/{msg.partition()}@{msg.offset()}"
        key = msg.key().decode("utf-8") if msg.key() is not None else None
        headers = headers_of(msg, where)
        if headers.get("schema_version") != KNOWN_SCHEMA_VERSION:
            raise ContractError(f"{where}: schema_version {headers.get('schema_version')!r} is not one this consumer knows: stop")
        check(schemas["key"], key, f"{where} key")
        check(schemas["headers"], headers, f"{where} headers")
        value = None
        if msg.value() is not None:
            value = json.loads(msg.value())
            check(schemas[topic_kind], value, f"{where} value")
        elif topic_kind == "state" and headers["event_type"] != "TOMBSTONE":
            raise ContractError(f"{where}: a null value that is no TOMBSTONE")
        return key, int(headers["state_version"]), value

    def on_state(msg):
        counts["state_records"] += 1
        flid, version, value = event_record(msg, "state")
        if version <= held.get(flid, 0):
            counts["state_dropped"] += 1  # a duplicate, or older than what is held
            return
        held[flid] = version
        if value is None:
            table.pop(flid, None)
        else:
            table[flid] = value

    def on_change(msg):
        counts["changes_records"] += 1
        flid, version, _ = event_record(msg, "changes")
        if (flid, version) in seen_changes:
            counts["changes_dropped"] += 1
            return
        seen_changes.add((flid, version))

    def on_heartbeat(msg):
        nonlocal last_beat
        last_beat = heartbeat_value(msg, schemas)
        counts["heartbeats"] += 1

    try:
        if args.watch_heartbeat:
            watch_heartbeat(config, args.heartbeat_topic, schemas, args.first_within)
            return 0
        read_topic(config, args.state_topic, on_state)
        read_topic(config, args.changes_topic, on_change)
        if args.heartbeat_topic:
            read_topic(config, args.heartbeat_topic, on_heartbeat)
    except ContractError as e:
        print(f"refconsumer: contract broken: {e}", file=sys.stderr)
        return 1
    except KafkaException as e:
        print(f"refconsumer: kafka: {e}", file=sys.stderr)
        return 2
    json.dump({"flights": table, "counts": counts, "last_heartbeat": last_beat}, sys.stdout, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
