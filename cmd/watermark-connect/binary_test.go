package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The version and date the test binary is stamped with, as `make build` does.
const (
	testVersion   = "v9.8.7-test"
	testDateBuilt = "2001-02-03T04:05:06Z"
)

// bin is the watermark-connect binary under test, built once per test run
// with the same -ldflags stamping as the Makefile, and with -race when the
// tests run with -race (testkit.RaceEnabled).
var bin = &testkit.Binary{Build: testkit.Build{
	Dir:     "../..", // go test runs in the package's folder
	Race:    testkit.RaceEnabled,
	LDFlags: "-X main.version=" + testVersion + " -X main.dateBuilt=" + testDateBuilt,
}, Timeout: 5 * time.Minute}

// TestMain removes the binary built by the tests, which lives outside any
// single test's TempDir because it is shared by all of them.
func TestMain(m *testing.M) {
	code := m.Run()
	bin.Remove()
	plainBin.Remove()
	os.Exit(code)
}

// binary returns the path of the watermark-connect binary.
func binary(t *testing.T) string {
	t.Helper()
	path, err := bin.Path()
	require.NoError(t, err, "building the binary")
	return path
}

// runBinary runs the binary to completion (bounded by 30s) with extra
// environment variables and returns its combined output and exit code.
func runBinary(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(append(os.Environ(), raceEnv...), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "%v timed out; output:\n%s", args, out)
	checkRaces(t, string(out))
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

// runBinarySplit is runBinary with stdout and stderr apart.
func runBinarySplit(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(append(os.Environ(), raceEnv...), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%v timed out; stderr:\n%s", args, errOut.String())
	checkRaces(t, errOut.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

// process is the binary running in the background, e.g. a pipeline.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// startBinary starts the binary; it is killed at the end of the test if it
// is still running.
func startBinary(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	return startBinaryAt(t, binary(t), env, args...)
}

// startBinaryAt is startBinary with a binary of its own: path.
func startBinaryAt(t *testing.T, path string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(path, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), raceEnv...), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		checkRaces(t, p.out.String())
		if t.Failed() {
			t.Logf("output of %v:\n%s", p.cmd.Args[1:], p.out.String())
		}
	})
	return p
}

// interrupt sends SIGINT, as Ctrl-C or a service manager would, and returns
// the exit code once the process has shut down (bounded by 30s).
func (p *process) interrupt(t *testing.T) int {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%v did not exit within 30s of SIGINT", p.cmd.Args[1:])
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// A race-built binary reports races on stderr instead of exiting with 66, so
// that checkRaces can tell a race of ours from a known upstream one.
var raceEnv = []string{"GORACE=exitcode=0"}

// knownUpstreamRace matches the one race Benthos v4.60.0 itself has under
// -race: in streams mode its HTTP server serves (gorilla/mux Router.Match)
// while streams register their endpoints on the same router, unsynchronised
// (internal/api.(*Type).RegisterEndpoint). Scraping /metrics in streams mode
// triggers it. Nothing of this module is involved.
func knownUpstreamRace(report string) bool {
	return strings.Contains(report, "gorilla/mux.(*Router).Match") &&
		strings.Contains(report, "internal/api.(*Type).RegisterEndpoint")
}

// checkRaces fails the test for every race report in a race-built binary's
// output, except the known upstream one, which it only logs.
func checkRaces(t *testing.T, out string) {
	t.Helper()
	const start, end = "WARNING: DATA RACE", "=================="
	for {
		i := strings.Index(out, start)
		if i < 0 {
			return
		}
		out = out[i+len(start):]
		report := out
		if j := strings.Index(out, end); j >= 0 {
			report = out[:j]
		}
		if knownUpstreamRace(report) {
			t.Log("ignoring Benthos's own streams-mode router race (see knownUpstreamRace)")
			continue
		}
		t.Errorf("the binary reported a data race:%s", report)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// poll is how often the tests' require.EventuallyWithT checks its condition.
const poll = 20 * time.Millisecond

// testingT is what the helpers that read state need: the test's *testing.T,
// or the *assert.CollectT of a require.EventuallyWithT condition, which runs
// on another goroutine and so must report to the CollectT, not the test.
type testingT interface {
	require.TestingT
	Helper()
}

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}
