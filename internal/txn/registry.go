package txn

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The registry holds, per consumer group, the session of the input that
// consumes it with exactly_once, for the output bound to that group to
// find. It is process-wide because Benthos builds an input and its output
// apart (and in streams mode, each stream's apart), with no handle from
// one to the other.
var registry = struct {
	mu       sync.Mutex
	sessions map[string]*Session
	// bound holds the partitioner of the output bound to each group; it
	// outlives a session, which each connection of the input makes anew.
	bound map[string]kgo.Partitioner
	// changed is closed, and replaced, whenever a session comes or goes,
	// waking every Bind that waits.
	changed chan struct{}
}{sessions: map[string]*Session{}, bound: map[string]kgo.Partitioner{}, changed: make(chan struct{})}

// Register makes s the session of its group. Two inputs of one process
// cannot consume one group with exactly_once: the outputs could not tell
// whose transaction their records go in.
func Register(s *Session) error {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if other, ok := registry.sessions[s.group]; ok && other != s {
		return fmt.Errorf("another kafka_watermark input of this process already consumes consumer_group %q with exactly_once: true; one group, one exactly-once input per process", s.group)
	}
	registry.sessions[s.group] = s
	close(registry.changed)
	registry.changed = make(chan struct{})
	return nil
}

// Unregister removes s, if it is still its group's session.
func Unregister(s *Session) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.sessions[s.group] == s {
		delete(registry.sessions, s.group)
		close(registry.changed)
		registry.changed = make(chan struct{})
	}
}

// Lookup returns the session of group, waiting for one until ctx ends.
func Lookup(ctx context.Context, group string) (*Session, error) {
	for {
		registry.mu.Lock()
		s, changed := registry.sessions[group], registry.changed
		registry.mu.Unlock()
		if s != nil {
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("no kafka_watermark input of this process consumes consumer_group %q with exactly_once: true (waited %w)", group, ctx.Err())
		}
	}
}

// Bind binds an output to group, with part its partitioner; unbind
// releases it. A second output bound to one group is refused: the records
// of two outputs in one transaction could not both follow the offsets it
// commits through one pipeline.
func Bind(group string, part kgo.Partitioner) (unbind func(), err error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, ok := registry.bound[group]; ok {
		return nil, fmt.Errorf("another kafka_watermark output of this process is already bound to consumer_group %q with exactly_once; one group, one bound output", group)
	}
	registry.bound[group] = part
	var once sync.Once
	return func() {
		once.Do(func() {
			registry.mu.Lock()
			defer registry.mu.Unlock()
			delete(registry.bound, group)
		})
	}, nil
}

// boundPartitioner is the partitioner of the output bound to group, nil
// when none is.
func boundPartitioner(group string) kgo.Partitioner {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.bound[group]
}
