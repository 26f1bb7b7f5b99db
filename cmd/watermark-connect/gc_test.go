package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/gctune"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// plainBin is the binary built without -race, for the tests that measure its
// memory: under -race the detector's shadow memory would be most of it. It is
// built only when such a test runs.
var plainBin = &testkit.Binary{Build: testkit.Build{Dir: "../.."}, Timeout: 5 * time.Minute}

// The GC settings line at start names each setting and where it came from,
// and --memory-limit is refused when it is not a size.
func TestGCSettingsLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", `
http: { enabled: false }
input:
  generate: { mapping: 'root = "x"', count: 1 }
output:
  drop: {}
`)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"defaults", nil, []string{"run", cfg},
			[]string{"GC settings: GC percent 300, the binary's default (GOGC unset)", "gc_percent_from=default"}},
		{"the flag on run", nil, []string{"run", "--memory-limit", "300MiB", cfg},
			[]string{"memory limit 300 MiB from --memory-limit", "memory_limit_from=flag"}},
		{"the flag on the root's -c", nil, []string{"--memory-limit", "1GiB", "-c", cfg},
			[]string{"memory limit 1.0 GiB from --memory-limit"}},
		{"the environment wins", []string{"GOGC=150", "GOMEMLIMIT=2GiB"}, []string{"run", "--memory-limit", "300MiB", cfg},
			[]string{"GC percent 150 from GOGC", "memory limit 2GiB from GOMEMLIMIT, over --memory-limit 300 MiB", "gc_percent_from=env", "memory_limit_from=env"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, code := runBinary(t, tc.env, tc.args...)
			require.Equal(t, 0, code, out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assert.Equal(t, 1, strings.Count(out, "GC settings:"), "one line:\n%s", out)
		})
	}
	out, code := runBinary(t, nil, "run", "--memory-limit", "lots", cfg)
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, `--memory-limit "lots": want a size such as 512MiB or 2GB, above zero`)
}

// The memory limit holds through a burst of large records. The binary
// reads a topic of 256 KiB records as fast as it can into drop, bounded the
// way a deployment bounds it (max_pending_batches, batch_max_bytes,
// fetch_max_bytes), so that what is live stays well under a container of
// 128 MiB: once at its default GC percent with no limit (GOGC=400 in its
// environment: what it runs with when no container limit is found), and once
// with the soft limit it would take from that container, LimitFraction of it,
// given with --memory-limit. The first run's peak anonymous memory must pass
// the container's 128 MiB (so the burst needs the limit, or the test shows
// nothing); the second's must stay under it, with every record delivered and
// committed: CPU, not an OOM kill, pays for the burst. A cgroup would be the
// real thing, but creating one needs privileges CI does not have; the soft
// limit is all the binary takes from a cgroup (internal/gctune's tests read
// fake ones).
func TestMemoryLimitHoldsThroughABurst(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second binary, without -race")
	}
	t.Parallel()
	path, err := plainBin.Path()
	require.NoError(t, err, "building the binary without -race")
	const (
		topic      = "burst"
		partitions = 8
		records    = 960
		size       = 256 << 10 // 240 MiB in all
		container  = 128 << 20
	)
	limit := uint64(gctune.SoftLimit(container))
	k := newTestKafka(t, partitions, topic)
	value := make([]byte, size)
	rs := make([]*kgo.Record, records)
	for i := range rs {
		_, _ = rand.Read(value[:64])
		rs[i] = &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: append([]byte(nil), value...)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(t, k.cl.ProduceSync(ctx, rs...).FirstErr())
	end := k.endOffsets(t, topic)

	run := func(name string, env []string, args ...string) (memPeak, string) {
		dir := t.TempDir()
		group := "g-" + name
		cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`
http: { enabled: false }
input:
  kafka_watermark:
    seed_brokers: [ %q ]
    topics: [ %q ]
    consumer_group: %q
    commit_period: 100ms
    max_pending_batches: 2
    batch_max_bytes: 256KiB
    fetch_max_bytes: 4MiB
output:
  drop: {}
`, k.addr, topic, group))
		p := startBinaryAt(t, path, env, append(args, cfg)...)
		stop := watchMemory(p.cmd.Process.Pid)
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			require.False(t, p.exited(), "%s: the binary exited:\n%s", name, p.out.String())
			got := map[int32]int64{}
			if rs, err := k.adm.FetchOffsets(ctx, group); err == nil { // the group may not exist yet
				rs.Each(func(o kadm.OffsetResponse) {
					if o.Topic == topic && o.Err == nil && o.At >= 0 {
						got[o.Partition] = o.At
					}
				})
			}
			if assert.ObjectsAreEqual(end, got) {
				break
			}
			require.True(t, time.Now().Before(deadline), "%s: committed %v after 2 minutes, want %v", name, got, end)
		}
		peak := stop()
		require.Equal(t, 0, p.interrupt(t), p.out.String())
		t.Logf("%s: peak anonymous RSS %s, peak RSS %s", name, humanize.IBytes(peak.anon), humanize.IBytes(peak.hwm))
		return peak, p.out.String()
	}
	untuned, _ := run("untuned", []string{"GOMEMLIMIT=off"}, "run")
	limited, out := run("limited", nil, "run", "--memory-limit", strconv.FormatUint(limit, 10))
	assert.Contains(t, out, "memory limit "+humanize.IBytes(limit)+" from --memory-limit")
	assert.Greater(t, untuned.anon, uint64(container), "without a limit the burst must need more than the container, or this test shows nothing")
	assert.Less(t, limited.anon, uint64(container), "with the soft limit at %s the process stays under the container's %s", humanize.IBytes(limit), humanize.IBytes(container))
}

// memPeak is the most a process held: anonymous memory (what a cgroup's
// OOM killer weighs: the Go heap, stacks and runtime) sampled every 10 ms,
// and the kernel's high-water mark of its whole resident set (VmHWM, which
// counts the binary's mapped text too).
type memPeak struct{ anon, hwm uint64 }

// watchMemory samples pid's memory until the returned function is called,
// which returns the peaks.
func watchMemory(pid int) func() memPeak {
	var (
		mu   sync.Mutex
		peak memPeak
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	status := filepath.Join("/proc", strconv.Itoa(pid), "status")
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			anon, hwm, err := readStatus(status)
			if err == nil {
				mu.Lock()
				peak.anon, peak.hwm = max(peak.anon, anon), max(peak.hwm, hwm)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() memPeak {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// readStatus reads RssAnon and VmHWM, in bytes, from a /proc/<pid>/status.
func readStatus(path string) (anon, hwm uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "RssAnon" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s %q: %w", k, v, err)
		}
		if k == "RssAnon" {
			anon = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return anon, hwm, sc.Err()
}
