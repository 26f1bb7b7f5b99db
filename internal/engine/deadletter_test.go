package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// fakeWriter is a DeadLetterWriter that records its letters; its first
// fail tries fail. Safe for concurrent use.
type fakeWriter struct {
	mu      sync.Mutex
	letters []Letter
	tries   int
	fail    int
}

func (w *fakeWriter) Write(_ context.Context, l *Letter) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tries++
	if w.tries <= w.fail {
		return "", errors.New("TOPIC_AUTHORIZATION_FAILED: not authorized")
	}
	w.letters = append(w.letters, *l)
	return "dlq", nil
}

func (w *fakeWriter) written() []Letter {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Letter(nil), w.letters...)
}

// offsets returns the offsets of l's records.
func (l Letter) offsets() []int64 {
	var out []int64
	for _, r := range l.Records {
		out = append(out, r.Offset)
	}
	return out
}

// deadLetterConfig is testConfig with a fakeWriter as the dead-letter topic.
func deadLetterConfig(t *testing.T, extra string) (*Config, *fakeWriter) {
	c := testConfig(t, extra)
	w := &fakeWriter{}
	c.DeadLetter = w
	return c, w
}

// assignFrom assigns tp to the owner with the group's commit at offset
// (leader epoch 0), as kgo does at an assignment.
func (h *ownerHarness) assignFrom(tp topicPartition, offset int64) {
	h.assign(tp)
	h.fetched(map[topicPartition]fetchedCommit{tp: {offset: offset, leaderEpoch: 0}})
}

// lastCommit decodes the last commit of tp; it fails the test if tp was
// never committed with metadata.
func (h *ownerHarness) lastCommit(tp topicPartition) commitmeta.Decoded {
	h.t.Helper()
	fc := h.lastFetched(tp)
	d, err := commitmeta.DecodeCommit(fc.meta)
	require.NoError(h.t, err, fc.meta)
	return d
}

// lastFetched is the last commit of tp, as a restart fetches it.
func (h *ownerHarness) lastFetched(tp topicPartition) fetchedCommit {
	h.t.Helper()
	h.cl.mu.Lock()
	defer h.cl.mu.Unlock()
	for i := len(h.cl.commits) - 1; i >= 0; i-- {
		if meta, ok := h.cl.commits[i].meta[tp]; ok {
			return fetchedCommit{offset: h.cl.commits[i].offsets[tp.topic][tp.partition].Offset, leaderEpoch: 0, meta: meta}
		}
	}
	h.t.Fatalf("no commit of %v", tp)
	return fetchedCommit{}
}

// In-process retries count attempts, each retry goes out only after a commit
// carries its attempt (the gate), and the batch that reaches max_attempts is
// dead-lettered at once: once the write is acknowledged the watermark passes
// it, with the dead-letter report in the commit.
func TestDeadLetterEndsARetryLoop(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "batch_max_records: 2\ncommit_period: 1h\nnack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 3 }\n")
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		a, b := batchAt(t, h.readAll(), 0, 2)
		require.Equal(t, 1, a.DeliveryAttempt())
		d := h.lastCommit(tp0)
		require.Equal(t, []commitmeta.Attempts{{From: 0, To: 2, N: 1}}, d.Attempts,
			"the first batch at the watermark goes out after a commit counts it, though commit_period is an hour")
		h.ack(b, nil)
		for attempt := 1; attempt < 3; attempt++ {
			h.ack(a, errors.New("HTTP 400: bad request"))
			time.Sleep(time.Second)
			synctest.Wait()
			a = h.read()
			require.Equal(t, attempt+1, a.DeliveryAttempt())
			require.Equal(t, []commitmeta.Attempts{{From: 0, To: 2, N: int32(attempt + 1)}}, h.lastCommit(tp0).Attempts,
				"attempt %d is committed before it goes out", attempt+1)
		}
		require.Empty(t, w.written())
		h.ack(a, errors.New("HTTP 400: bad request"))
		letters := w.written()
		require.Len(t, letters, 1)
		require.Equal(t, []int64{0, 1}, letters[0].offsets())
		require.Equal(t, 3, letters[0].Attempts)
		require.Contains(t, letters[0].Error, "400")
		require.False(t, letters[0].FirstFailed.IsZero())
		require.Equal(t, int64(2), g.Get(MetricDeadLettered, "t", 0))
		time.Sleep(time.Hour) // the next commit
		synctest.Wait()
		d = h.lastCommit(tp0)
		require.Equal(t, int64(4), d.Base, "the watermark passed the dead letters")
		require.Empty(t, d.Attempts)
		require.NotNil(t, d.DeadLetter)
		require.Equal(t, commitmeta.DeadLetter{Report: commitmeta.Report{First: 0, Last: 1, Since: d.DeadLetter.Since, Reason: letters[0].Error}, Count: 2}, *d.DeadLetter)
	})
}

// The commit barrier: while the dead-letter write fails, the batch stays
// failed, its partition stalled (the provenance names the failing write)
// and nothing is committed past it; once a try succeeds, it is.
func TestDeadLetterBarrierHoldsWhileTheWriteFails(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "batch_max_records: 2\ncommit_period: 1s\nnack_retry: { max_retries: 0, initial_backoff: 1s, max_backoff: 4s }\nstall_replay_after: 0s\n")
		w.fail = 3
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		a, b := batchAt(t, h.readAll(), 0, 2)
		h.ack(b, nil)
		h.ack(a, errors.New("HTTP 503"))
		for range 3 {
			time.Sleep(time.Second)
			synctest.Wait()
			d := h.lastCommit(tp0)
			require.Equal(t, int64(0), d.Base, "never past a record that reached neither the sink nor the dead-letter topic")
			require.NotNil(t, d.Stall)
			require.Contains(t, d.Stall.Reason, "dead_letter_write")
			require.Equal(t, int64(1), g.Get(MetricStalled, "t", 0))
		}
		time.Sleep(8 * time.Second) // backoffs 1s, 2s, 4s
		synctest.Wait()
		require.Equal(t, int64(3), g.Get(MetricDeadLetterErrors, "t", 0))
		require.Len(t, w.written(), 1)
		time.Sleep(time.Second)
		synctest.Wait()
		d := h.lastCommit(tp0)
		require.Equal(t, int64(4), d.Base)
		require.Nil(t, d.Stall)
		require.Equal(t, int64(0), g.Get(MetricStalled, "t", 0))
	})
}

// A batch error that names its failed records dead-letters those only; the
// rest of the batch counts as delivered.
func TestDeadLetterOnlyTheFailedRecords(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "batch_max_records: 4\ncommit_period: 1s\ndead_letter: { max_attempts: 1 }\n")
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		b := h.read()
		h.o.inbox.ackCh <- ackMsg{b: b, err: errors.New("two rows refused"), failed: []int{1, 3}}
		synctest.Wait()
		letters := w.written()
		require.Len(t, letters, 1)
		require.Equal(t, []int64{1, 3}, letters[0].offsets())
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(4), h.lastCommit(tp0).Base)
	})
}

// A plain nack of a retry that a batch error narrowed fails what that retry
// held. The bug: under none the plain nack reset the narrowing, so the next
// retry held the whole batch again, delivering twice the records the sink
// had accepted, and dead-lettering them. Under key the batch error takes the
// accepted records out of the hand-out itself (keyPart.split, keyed_ack.go).
func TestPlainNackKeepsTheRetryNarrowed(t *testing.T) {
	for _, ordering := range []string{"none", "key"} {
		t.Run(ordering, func(t *testing.T) {
			m, _ := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				conf, w := deadLetterConfig(t, "ordering: "+ordering+"\nbatch_max_records: 4\ncommit_period: 1s\n"+
					"nack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 3 }\n")
				h := startOwner(t, conf, m)
				h.assignFrom(tp0, 0)
				h.fetch(tp0, 4, keyedRecords(tp0, 0, 4, func(o int64) (string, bool) { return fmt.Sprint(o), true })...)
				b := h.read()
				h.o.inbox.ackCh <- ackMsg{b: b, err: errors.New("row 1 refused"), failed: []int{1}}
				synctest.Wait()
				for attempt := 2; attempt <= 3; attempt++ {
					time.Sleep(time.Second) // the backoff
					synctest.Wait()
					retry := h.read()
					require.Equal(t, attempt, retry.DeliveryAttempt())
					records, _ := retry.Records()
					require.Equal(t, []int64{1}, Letter{Records: records}.offsets(),
						"attempt %d holds the named record only", attempt)
					h.ack(retry, errors.New("HTTP 503"))
				}
				letters := w.written()
				require.Len(t, letters, 1)
				require.Equal(t, []int64{1}, letters[0].offsets(), "only the named record is dead-lettered")
				time.Sleep(time.Second)
				synctest.Wait()
				require.Equal(t, int64(4), h.lastCommit(tp0).Base)
			})
		})
	}
}

// Attempts survive restarts: each restart's first hand-out of the batch at
// the watermark is committed first, so a record that kills the process
// before any verdict (a crash loop) is counted too, and after max_attempts
// it goes to the dead-letter topic without another hand-out.
func TestDeadLetterAttemptsSurviveRestarts(t *testing.T) {
	m, _ := testMetrics(t)
	var meta fetchedCommit
	conf := "batch_max_records: 2\ncommit_period: 1s\nstall_replay_after: 1h\ndead_letter: { max_attempts: 3 }\n"
	// run is one process: it starts from meta, and dies (its owner stops
	// without a final commit) when the batch at the watermark is handed
	// out, as a poison record that crashes the process would make it.
	run := func(t *testing.T, nack bool) (*Batch, *fakeWriter) {
		var got *Batch
		var w *fakeWriter
		synctest.Test(t, func(t *testing.T) {
			var c *Config
			c, w = deadLetterConfig(t, conf)
			h := startOwner(t, c, m)
			h.assign(tp0)
			h.fetched(map[topicPartition]fetchedCommit{tp0: meta})
			h.fetch(tp0, 4, records(tp0, 0, 4)...)
			for _, b := range h.readAll() {
				if b.raw.first == 0 {
					got = b
				}
			}
			if got != nil && nack {
				h.ack(got, errors.New("HTTP 400"))
			}
			time.Sleep(time.Second)
			synctest.Wait()
			meta = h.lastFetched(tp0)
		})
		return got, w
	}
	meta = fetchedCommit{offset: 0, leaderEpoch: 0}
	b, _ := run(t, true)
	require.Equal(t, 1, b.DeliveryAttempt())
	b, _ = run(t, false) // crashes mid-delivery
	require.Equal(t, 2, b.DeliveryAttempt(), "the nacked attempt was carried across the restart")
	b, _ = run(t, false)
	require.Equal(t, 3, b.DeliveryAttempt(), "the attempt cut short by the crash was committed before it went out")
	b, w := run(t, false)
	require.Nil(t, b, "tried max_attempts times: not handed out again")
	letters := w.written()
	require.Len(t, letters, 1)
	require.Equal(t, 3, letters[0].Attempts)
	require.Equal(t, []int64{0, 1}, letters[0].offsets())
	require.Contains(t, letters[0].Error, "400", "the error class of the first process, carried through the crashes in the stall provenance")
	require.False(t, letters[0].FirstFailed.IsZero())
	d, err := commitmeta.DecodeCommit(meta.meta)
	require.NoError(t, err)
	require.Equal(t, int64(2), d.Base, "committed past the dead letters")
	require.Empty(t, d.Attempts)
}

// batchAt returns the batches of bs that start at each of firsts, in that
// order: a batch waiting for the gate goes out after those behind it.
func batchAt(t *testing.T, bs []*Batch, firsts ...int64) (*Batch, *Batch) {
	t.Helper()
	require.Len(t, bs, len(firsts))
	var out [2]*Batch
	for i, f := range firsts {
		for _, b := range bs {
			if b.raw.first == f {
				out[i] = b
			}
		}
		require.NotNil(t, out[i], "a batch at %d", f)
	}
	return out[0], out[1]
}

// Without a dead-letter topic nothing waits for a commit: the first batch
// goes out at once, as before.
func TestNoDeadLetterTopicNoGate(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "commit_period: 1h\n"), m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		require.Equal(t, 1, h.read().DeliveryAttempt())
		h.cl.mu.Lock()
		defer h.cl.mu.Unlock()
		require.Empty(t, h.cl.commits)
	})
}

// A failed batch still in memory when retention deletes it is dead-lettered
// from memory, not lost: only what was never fetched is reported lost.
func TestDeadLetterFromMemoryAfterRetention(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "batch_max_records: 100\nmax_pending_batches: 4\ncommit_period: 1s\ntopic_lag_refresh_period: 1s\n"+
			"nack_retry: { max_retries: 0, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 1 }\n")
		w.fail = 1 << 30 // the dead-letter topic is down
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 2000, records(tp0, 0, 400)...)
		bs := h.readAll()
		slices.SortFunc(bs, func(a, b *Batch) int { return cmp.Compare(a.raw.first, b.raw.first) }) // the first waited for the gate
		require.Equal(t, []int64{0, 100, 200, 300}, firsts(bs))
		h.ack(bs[0], nil)
		h.ack(bs[1], errors.New("HTTP 400"))
		h.ack(bs[2], nil)
		h.ack(bs[3], nil)
		h.cl.setStart(tp0, 1500) // retention passes the failed batch
		h.fetchFrom(tp0, 2000, 1500, records(tp0, 1500, 1600)...)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, int64(1100), g.Get(MetricLostRecords, "t", 0), "400-1499 were never fetched and are gone; 100-199 are in memory")
		h.ack(h.read(), nil) // 1500-1599
		require.Equal(t, int64(100), h.lastCommit(tp0).Base, "nothing past the batch while the dead-letter topic is down")
		w.mu.Lock()
		w.fail = 0 // the topic is back
		w.mu.Unlock()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		require.Len(t, w.written(), 1)
		require.Equal(t, int64(100), g.Get(MetricDeadLettered, "t", 0))
		require.Equal(t, int64(1100), g.Get(MetricLostRecords, "t", 0), "the dead letters were not lost")
		require.Equal(t, int64(1600), h.lastCommit(tp0).Base)
	})
}

// Attempts count through replays in place: each replay's new epoch carries
// the attempts of the one it ended, and the nack that brings the batch to
// max_attempts dead-letters it at once, without waiting for another replay.
func TestDeadLetterCountsReplaysInPlace(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "batch_max_records: 2\ncommit_period: 1s\nstall_replay_after: 10s\ndrain_timeout: 1s\ndead_letter: { max_attempts: 3 }\n")
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		a, b := batchAt(t, h.readAll(), 0, 2)
		h.ack(b, nil)
		firstFailed := time.Now()
		for attempt := 1; attempt <= 3; attempt++ {
			require.Equal(t, attempt, a.DeliveryAttempt())
			h.ack(a, errors.New("HTTP 422"))
			if attempt == 3 {
				break
			}
			time.Sleep(10 * time.Second << (attempt - 1)) // the replay, backed off after the first
			synctest.Wait()
			require.Equal(t, int64(attempt), g.Get(MetricStallReplays, "t", 0))
			h.fetch(tp0, 4) // the rewind's poll window
			h.fetch(tp0, 4, records(tp0, 0, 4)...)
			bs := h.readAll()
			require.Equal(t, []int64{0}, firsts(bs), "2-3 was delivered: skipped")
			a = bs[0]
		}
		letters := w.written()
		require.Len(t, letters, 1, "dead-lettered at the third nack, not at a third replay")
		require.Equal(t, 3, letters[0].Attempts)
		require.Equal(t, firstFailed, letters[0].FirstFailed, "the first failure, two replays before")
		require.Equal(t, int64(2), g.Get(MetricStallReplays, "t", 0))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(4), h.lastCommit(tp0).Base)
	})
}

// Bug (issue 29): a stall reason "dead_letter_write: " + a class of 120
// bytes was cut at 120 bytes, mid-word. It ends at the last whole word that
// fits, as errclass ends a class.
func TestCutReasonEndsAtAWholeWord(t *testing.T) {
	class := strings.Repeat("broker ", 16) + "unreachable" // 123 bytes
	got := cutReason("dead_letter_write: " + class)
	assert.LessOrEqual(t, len(got), commitmeta.MaxReasonLen)
	assert.Equal(t, "dead_letter_write: "+strings.TrimSpace(strings.Repeat("broker ", 14)), got)
	assert.Equal(t, "short", cutReason("short"))
	exact := strings.Repeat("x", commitmeta.MaxReasonLen-5) + " word"
	assert.Equal(t, exact, cutReason(exact), "a reason that fits is left whole")
	assert.Equal(t, exact, cutReason(exact+" more"), "a cut that falls on a space keeps the last word")
	long := strings.Repeat("y", 200)
	assert.Equal(t, long[:commitmeta.MaxReasonLen], cutReason(long), "one word longer than the limit is cut at it")
}
