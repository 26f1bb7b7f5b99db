package engine

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// Issue 28, defect 4: a replay in place copied the loss and dead-letter
// reports to the new epoch but did not list it for expiry, so its commits
// (and `status`) went on showing LOST and DEAD-LETTERED past
// lost_records_report_for and dead_letter.report_for, until a restart. A
// truncation had the same gap for every report its own loss did not list
// (here the dead-letter report, with lost_records_report_for 0s). Each
// cause starts from a commit carrying the reports, makes a successor that
// carries them, and must see them leave the commits once their time is up.
func TestSuccessorReportsExpire(t *testing.T) {
	for _, cause := range []string{"replay", "truncation"} {
		t.Run(cause, func(t *testing.T) {
			m, g := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				lostFor := "1m"
				if cause == "truncation" {
					lostFor = "0s" // the truncation's own report would list it
				}
				h := startOwner(t, testConfig(t, "batch_max_records: 2\ncommit_period: 1s\nstall_replay_after: 10s\ndrain_timeout: 1s\n"+
					"lost_records_report_for: "+lostFor+"\ndead_letter: { report_for: 1m }\n"), m)
				meta, _, _ := commitmeta.EncodeCommit(commitmeta.Commit{Base: 10, Epoch: 0,
					Loss:       &commitmeta.Loss{Report: commitmeta.Report{First: 0, Last: 9, Since: time.Now(), Reason: commitmeta.CauseRetention}, Count: 10},
					DeadLetter: &commitmeta.DeadLetter{Report: commitmeta.Report{First: 5, Last: 5, Since: time.Now(), Reason: "HTTP 400"}, Count: 1},
				}, 4000)
				h.assign(tp0)
				h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 10, leaderEpoch: 0, meta: meta}})
				h.fetch(tp0, 14, records(tp0, 10, 14)...)
				a, b := batchAt(t, h.readAll(), 10, 12)
				h.ack(b, nil)
				if cause == "replay" {
					h.ack(a, errors.New("HTTP 400")) // failed for good: replayed after 10s
					time.Sleep(10 * time.Second)
					synctest.Wait()
					require.Equal(t, int64(1), g.Get(MetricStallReplays, "t", 0))
					h.fetch(tp0, 14) // the rewind's poll window
				} else {
					h.ack(a, nil)
					h.fetch(tp0, 16, epochRecords(tp0, 12, 16, 1)...) // truncated at 12
					require.Equal(t, int64(2), g.Get(MetricTruncated, "t", 0))
					for _, b := range h.readAll() {
						h.ack(b, nil)
					}
				}
				time.Sleep(2 * time.Second)
				synctest.Wait()
				d := h.lastCommit(tp0)
				require.NotNil(t, d.DeadLetter, "the successor carries the dead-letter report")
				if cause == "replay" {
					require.NotNil(t, d.Loss, "the successor carries the loss report")
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				time.Sleep(time.Second)
				synctest.Wait()
				d = h.lastCommit(tp0)
				require.Nil(t, d.DeadLetter, "dead_letter.report_for is up")
				require.Nil(t, d.Loss, "lost_records_report_for is up")
			})
		})
	}
}

// Issue 28, defect 6: a truncation forgot the attempts of the records below
// the point where the logs diverged, which the new log still holds: a batch
// tried 3 times (dead_letter.max_attempts 4) at offsets 0-1 went out as
// attempt 1 after a truncation at 3, and would have gone to the dead-letter
// topic only after 4 more deliveries.
func TestSuccessorOfATruncationCarriesTheAttempts(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "batch_max_records: 2\ncommit_period: 1h\nnack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 4 }\n")
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		a, b := batchAt(t, h.readAll(), 0, 2)
		h.ack(b, nil)
		for a.DeliveryAttempt() < 3 {
			h.ack(a, errors.New("HTTP 400"))
			time.Sleep(time.Second)
			synctest.Wait()
			a = h.read()
		}
		h.ack(a, errors.New("HTTP 400")) // the third failure; a waits for its fourth attempt
		h.fetch(tp0, 6, epochRecords(tp0, 3, 6, 1)...)
		h.cl.mu.Lock()
		require.Equal(t, kgo.EpochOffset{Epoch: 0, Offset: 0}, h.cl.rewinds[len(h.cl.rewinds)-1][tp0.topic][tp0.partition], "rewound to the watermark")
		h.cl.mu.Unlock()
		h.fetch(tp0, 6, append(records(tp0, 0, 3), epochRecords(tp0, 3, 6, 1)...)...)
		bs := h.readAll()
		require.ElementsMatch(t, []int64{0, 3, 5}, firsts(bs), "2 was delivered from the log the new one holds: skipped")
		again := bs[slices.Index(firsts(bs), 0)] // after the others: it waited for the gate
		require.Equal(t, 4, again.DeliveryAttempt(), "three attempts before the truncation, which did not rewrite 0-1")
		h.ack(again, errors.New("HTTP 400"))
		letters := w.written()
		require.Len(t, letters, 1, "dead-lettered after its fourth delivery")
		require.Equal(t, []int64{0, 1}, letters[0].offsets())
		require.Equal(t, 4, letters[0].Attempts)
	})
}

// Issue 28, defect 7: under ordering: key a truncation made its successor
// at once, while the old epoch's hand-out of offset 1 (key a) was still
// out: the successor, rewound to the watermark (1), handed out offset 1
// again and then the new log's offset 2 (key a), so a newer record of key a
// could reach the sink before an older one. A replay and a revoke drain
// first; now a truncation does too: nothing goes out until the old
// hand-out is acknowledged, and that acknowledgement counts.
func TestSuccessorOfAKeyedTruncationDrainsFirst(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "ordering: key\nbatch_max_records: 1\ncommit_period: 1s\ndrain_timeout: 1m\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		oldKeys, newKeys := []string{"b", "a", "c", "d"}, []string{"a", "e"}
		h.fetch(tp0, 4, keyedRecords(tp0, 0, 4, func(o int64) (string, bool) { return oldKeys[o], true })...)
		bs := h.readAll()
		require.Len(t, bs, 4)
		var held *Batch
		for _, b := range bs {
			if offsets(b)[0] == 1 {
				held = b // key a's offset 1 stays out
				continue
			}
			h.ack(b, nil)
		}
		newLog := func(from int64) []*kgo.Record {
			rs := keyedRecords(tp0, from, 4, func(o int64) (string, bool) {
				if o < 2 {
					return oldKeys[o], true
				}
				return newKeys[o-2], true
			})
			for _, r := range rs {
				if r.Offset >= 2 {
					r.LeaderEpoch = 1
				}
			}
			return rs
		}
		h.fetch(tp0, 4, newLog(2)...) // truncated at 2
		h.fetch(tp0, 4)
		h.fetch(tp0, 4, newLog(1)...)
		_, out := h.tryRead()
		require.False(t, out, "nothing goes out while key a's offset 1 is out")

		h.ack(held, nil) // the drain ends: the successor starts at 2
		require.Equal(t, int64(2), g.Get(MetricTruncated, "t", 0), "2-3 were delivered from the old log")
		h.fetch(tp0, 4) // the rewind's poll window
		h.cl.mu.Lock()
		require.Equal(t, kgo.EpochOffset{Epoch: 0, Offset: 2}, h.cl.rewinds[len(h.cl.rewinds)-1][tp0.topic][tp0.partition])
		h.cl.mu.Unlock()
		h.fetch(tp0, 4, newLog(2)...)
		var got [][]int64
		for _, b := range h.readAll() {
			got = append(got, offsets(b))
			h.ack(b, nil)
		}
		require.Equal(t, [][]int64{{2}, {3}}, got, "the new log from the divergence point, once")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, kgo.EpochOffset{Epoch: 1, Offset: 4}, h.cl.committed(tp0)[len(h.cl.committed(tp0))-1])
	})
}

// Bug (model seed 20016498): the poll in whose window a replay in place is
// rewound is dropped, and with it kgo's report that the log was truncated
// below records the replayed epoch carries as delivered. The replay then
// skipped the new log's records there as delivered, and a deletion of them
// went unreported. The truncation is taken all the same: the records from
// the divergence point are delivered again from the new log.
func TestReplayTakesATruncationReportedInItsRewindWindow(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\nstall_replay_after: 4s\ndrain_timeout: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 2, leaderEpoch: 0}})
		h.fetch(tp0, 5, records(tp0, 2, 5)...)
		bs := h.readAll()
		require.Equal(t, []int64{2, 3, 4}, firsts(bs))
		h.ack(bs[0], errors.New("poison")) // the head fails: the partition stalls at 2
		h.ack(bs[1], nil)
		h.ack(bs[2], nil)           // 3-4 delivered above the watermark, from the log of leader epoch 0
		time.Sleep(4 * time.Second) // stall_replay_after: nothing in the pipeline, the replay is made
		synctest.Wait()
		require.Equal(t, int64(1), g.Get(MetricStallReplays, "t", 0))

		// The poll of the rewind's window, fetched from the old position,
		// reports that an unclean election truncated the log at 3.
		h.fetchErr(tp0, &kgo.ErrDataLoss{Topic: "t", Partition: 0, ConsumedTo: 5, ConsumedToEpoch: 0, ResetTo: 3, ResetToEpoch: 1})
		require.Equal(t, int64(2), g.Get(MetricTruncated, "t", 0), "3-4 were delivered from the old log")

		// The replay reads the new log from the watermark: 3 and 4 are
		// other records now, and go out.
		h.fetch(tp0, 6, append(records(tp0, 2, 3), epochRecords(tp0, 3, 6, 1)...)...)
		require.Equal(t, []int64{2, 3, 4, 5}, firsts(h.readAll()))
	})
}
