// Package apachekafka runs real Apache Kafka brokers (KRaft, version pinned in
// tools/kafka/pom.xml) on 127.0.0.1 for tests and fault experiments: one node, or a cluster of
// nodes that are each broker and controller, with the replication settings production uses
// (three replicas, two in sync). The jars come from Maven Central through
// scripts/ensure-kafka.sh; the nodes run as child JVMs sized for a small shared machine.
//
// Each node can be killed (SIGKILL), stopped (SIGTERM), restarted on the same data and ports,
// and frozen (SIGSTOP) and thawed; the cluster says which node leads a partition, the
// controller quorum, or a transactional id's coordinator. Readiness is asked of the cluster
// (metadata and quorum), never waited for by time.
//
// Tests call Start or StartCluster; other programs call Launch and Close.
package apachekafka
