package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// A run is measured over its window: from the first scrape that sees a
// record sent to the moment all are. Process start, group join and
// shutdown fall outside it, for every contender alike. The end is
// interpolated between the last two scrapes, for the time linearly, for the
// CPU time (utime+stime of all the process's threads, from /proc, in clock
// ticks) at the rate the process used it so far in the window, at most what
// the last scrape read: after its last record a process idles.
//
// A scrape of a Benthos process's /metrics costs it about 2ms of CPU with 64
// partitions of kafka_watermark series (more series than the baseline has),
// so Benthos contenders are scraped seldom; the raw loop's endpoint costs
// nothing and is scraped often, as it is over soonest.
const (
	scrapeBenthos = 200 * time.Millisecond
	scrapeRaw     = 10 * time.Millisecond
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux everywhere but exotic builds).
const clockTick = 10 * time.Millisecond

// measured is one run of one contender.
type measured struct {
	rate            float64       // records per second over the window
	cpuPerM         float64       // CPU seconds per million records over the window
	window          time.Duration // the window's length
	records         int64         // records sent within the window
	total           time.Duration // the whole process's CPU time, from its rusage
	peakRSS         float64       // the process's peak resident set, bytes (VmHWM at its last scrape)
	faultsPerRecord float64       // minor page faults per record over the window, for the log
}

// sample is one scrape.
type sample struct {
	at    time.Time
	count int64
	cpu   time.Duration
	hwm   int64 // VmHWM, bytes: the peak resident set so far
	flt   int64 // minor page faults so far
}

// proc is one started contender process; its output goes to a log file in
// its directory.
type proc struct {
	cmd  *exec.Cmd
	log  string
	addr string // its /metrics endpoint
	done chan error
}

// startProc starts bin in dir with args, in this process's environment
// plus env.
func startProc(dir, name, bin string, args []string, addr string, env ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, f, f
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, log: logPath, addr: addr, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p, nil
}

// stop sends SIGTERM and waits for the exit, SIGKILL after 30s.
func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("no exit within 30s of SIGTERM (killed); log %s", p.log)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// measure scrapes p until it has sent want records, then stops it, once
// hold (when not nil) is closed.
func (p *proc) measure(ctx context.Context, want int64, every, timeout time.Duration, hold <-chan struct{}) (measured, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var first, prev, last sample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = p.stop()
			return measured{}, fmt.Errorf("%d of %d records sent after %v; last log lines:\n%s", last.count, want, timeout, p.tail())
		case err := <-p.done:
			return measured{}, fmt.Errorf("exited early (%w); last log lines:\n%s", err, p.tail())
		case <-tick.C:
		}
		n, err := scrapeSent(ctx, p.addr)
		if err != nil {
			continue // not listening yet
		}
		cpu, flt, err := procCPU(p.cmd.Process.Pid)
		if err != nil {
			continue
		}
		hwm, err := procHWM(p.cmd.Process.Pid)
		if err != nil {
			continue
		}
		s := sample{at: time.Now(), count: n, cpu: cpu, hwm: hwm, flt: flt}
		if first.count == 0 {
			first = s
		}
		prev, last = last, s
		if s.count >= want {
			break
		}
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	if err := p.stop(); err != nil {
		return measured{}, err
	}
	if first.count >= want {
		return measured{}, fmt.Errorf("all %d records were sent before the second scrape: make the run longer", want)
	}
	// The moment the count reached want, between the last two scrapes.
	end, cpu := last.at, last.cpu
	if prev.count > 0 && last.count > prev.count {
		f := float64(want-prev.count) / float64(last.count-prev.count)
		end = prev.at.Add(time.Duration(f * float64(last.at.Sub(prev.at))))
		if prev.at.After(first.at) {
			rate := float64(prev.cpu-first.cpu) / float64(prev.at.Sub(first.at))
			cpu = min(last.cpu, prev.cpu+time.Duration(rate*float64(end.Sub(prev.at))))
		}
	}
	m := measured{window: end.Sub(first.at), records: want - first.count}
	m.rate = float64(m.records) / m.window.Seconds()
	m.cpuPerM = (cpu - first.cpu).Seconds() / (float64(m.records) / 1e6)
	if last.count > first.count {
		m.faultsPerRecord = float64(last.flt-first.flt) / float64(last.count-first.count)
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.total = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	m.peakRSS = float64(last.hwm)
	return m, nil
}

// scrapeSent reads output_sent (summed over its series) from addr/metrics.
func scrapeSent(ctx context.Context, addr string) (int64, error) {
	m, err := testkit.ScrapeMetrics(ctx, addr)
	if err != nil {
		return 0, err
	}
	sum, series := m.Sum("output_sent")
	if series == 0 {
		return 0, errors.New("no output_sent yet")
	}
	return int64(sum), nil
}

// procCPU is the user plus system time of every thread of pid so far, and
// its minor page faults (a page's first touch: the kernel's time for it is
// the faulting instruction's in a CPU profile).
func procCPU(pid int) (time.Duration, int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields after
	// it. minflt, utime and stime are fields 10, 14 and 15, so 8, 12 and 13
	// after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	flt, err0 := strconv.ParseInt(f[7], 10, 64)
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err0, err1, err2); err != nil {
		return 0, 0, err
	}
	return time.Duration(ut+st) * clockTick, flt, nil
}

// procHWM is pid's peak resident set so far (VmHWM), in bytes. Not the
// rusage's maxrss: Linux carries the forking process's high-water mark into
// its child's across exec (the driver holds hundreds of megabytes after
// filling the topics), so maxrss never reads below the driver's; VmHWM
// belongs to the image exec started.
func procHWM(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// freeAddr returns a 127.0.0.1 address that nothing listens on, on a port
// below the kernel's ephemeral range (resources/kafka/README.md says why).
func freeAddr() (string, error) {
	for range 100 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(9000)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		l.Close()
		return addr, nil
	}
	return "", errors.New("no free port in 20000-28999")
}
