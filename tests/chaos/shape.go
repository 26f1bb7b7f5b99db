package main

import (
	"context"
	"path/filepath"
	"time"
)

// This file holds the interface a run drives Kafka through, and the single
// broker's side of it; cluster.go and clusterops.go hold the cluster's.

// kafkaShape is the Kafka a run uses: the single broker of broker.sh, or
// the 3-node cluster this harness launches itself.
type kafkaShape interface {
	start(ctx context.Context) error
	stop(ctx context.Context) error
	seeds() string                 // comma-separated PLAINTEXT addresses, for the harness's clients
	memberSeeds(member int) string // what member i (0-based) connects to
	size() int
	replication() int
	// restart stops node (0-based) with SIGTERM, or SIGKILL when kill,
	// waits pause and starts it again on its data.
	restart(ctx context.Context, node int, kill bool, pause time.Duration) error
	// ready waits until it serves (a cluster: every partition fully in
	// sync, so that the next restart is one broker at a time).
	ready(ctx context.Context) error
	outages() []window
	keepLogs(dir string)
	nodeAddr(i int) string // node i's (0-based) client address, for the harness
}

// ---------------------------------------------------------------------------
// The single broker (broker.sh).

func (b *broker) seeds() string               { return b.addr() }
func (b *broker) memberSeeds(int) string      { return b.addr() }
func (b *broker) size() int                   { return 1 }
func (b *broker) replication() int            { return 1 }
func (b *broker) ready(context.Context) error { return nil }
func (b *broker) nodeAddr(int) string         { return b.addr() }

func (b *broker) restart(ctx context.Context, _ int, kill bool, pause time.Duration) error {
	if kill {
		return b.restartKill(ctx, pause)
	}
	return b.restartTerm(ctx, pause)
}

func (b *broker) keepLogs(dir string) {
	if err := b.keepLog(filepath.Join(dir, "broker-server.log")); err != nil {
		b.logf("keep the broker log: %v", err)
	}
}
