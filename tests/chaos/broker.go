package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// window is a span in Unix ns during which the broker was not serving
// (to == 0 while it still is down).
type window struct{ from, to int64 }

// broker drives the harness's own single-node broker through
// resources/kafka/broker.sh, with a private run dir and ports.
type broker struct {
	script string
	runDir string
	port   int
	env    []string
	logf   func(format string, args ...any)

	mu      sync.Mutex
	windows []window
}

func newBroker(o *options, logf func(string, ...any)) *broker {
	env := append(os.Environ(),
		"KAFKA_RUN_DIR="+o.runDir,
		"KAFKA_PORT="+strconv.Itoa(o.port),
		"KAFKA_CONTROLLER_PORT="+strconv.Itoa(o.port+1),
		"KAFKA_SASL_SSL_PORT="+strconv.Itoa(o.port+2),
		// Generous: a SIGKILLed broker recovers its logs, on a shared 2-core
		// machine. SIGTERM must stay a clean stop, never turn into SIGKILL.
		"KAFKA_START_TIMEOUT=240",
		"KAFKA_STOP_TIMEOUT=120",
	)
	return &broker{script: o.brokerScript, runDir: o.runDir, port: o.port, env: env, logf: logf}
}

func (b *broker) addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

func (b *broker) serverLog() string { return filepath.Join(b.runDir, "logs", "server.log") }

// keepLog copies the broker's log (every start appends to it) to dst.
func (b *broker) keepLog(dst string) error {
	in, err := os.Open(b.serverLog())
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// script runs broker.sh cmd.
func (b *broker) sh(ctx context.Context, cmd string) error {
	c := exec.CommandContext(ctx, "bash", b.script, cmd)
	c.Env = b.env
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	if err != nil {
		return fmt.Errorf("broker.sh %s: %w\n%s", cmd, err, lastLines(out.String(), 40))
	}
	b.logf("broker.sh %s took %v", cmd, time.Since(start).Round(time.Millisecond))
	return nil
}

func (b *broker) start(ctx context.Context) error { return b.sh(ctx, "start") }

func (b *broker) stop(ctx context.Context) error { return b.sh(ctx, "stop") }

// down records the start of an outage.
func (b *broker) down() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.windows = append(b.windows, window{from: time.Now().UnixNano()})
}

// up records the end of the outage.
func (b *broker) up() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.windows); n > 0 && b.windows[n-1].to == 0 {
		b.windows[n-1].to = time.Now().UnixNano()
	}
}

func (b *broker) outages() []window {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]window(nil), b.windows...)
}

// restartTerm stops the broker with SIGTERM (a clean shutdown), waits pause
// and starts it again on the same data.
func (b *broker) restartTerm(ctx context.Context, pause time.Duration) error {
	b.down()
	defer b.up()
	if err := b.sh(ctx, "stop"); err != nil {
		return err
	}
	if err := sleepCtx(ctx, pause); err != nil {
		return err
	}
	return b.sh(ctx, "restart")
}

// restartKill SIGKILLs the broker, waits pause and starts it again on the
// same data (the broker recovers its unflushed segments).
func (b *broker) restartKill(ctx context.Context, pause time.Duration) error {
	pid, err := b.pid()
	if err != nil {
		return err
	}
	b.down()
	defer b.up()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 broker pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(time.Minute)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("broker pid %d still alive a minute after SIGKILL", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.logf("broker pid %d killed (SIGKILL)", pid)
	if err := sleepCtx(ctx, pause); err != nil {
		return err
	}
	return b.sh(ctx, "restart")
}

// pid is the broker's process id from its pid file, checked to be this run
// dir's broker: a recycled pid is never signalled.
func (b *broker) pid() (int, error) {
	raw, err := os.ReadFile(filepath.Join(b.runDir, "broker.pid"))
	if err != nil {
		return 0, fmt.Errorf("broker pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("broker pid file holds %q", raw)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, fmt.Errorf("broker pid %d: %w", pid, err)
	}
	want := "kafka.Kafka " + filepath.Join(b.runDir, "server.properties")
	if !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), want) {
		return 0, fmt.Errorf("pid %d is not the broker of %s", pid, b.runDir)
	}
	return pid, nil
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
