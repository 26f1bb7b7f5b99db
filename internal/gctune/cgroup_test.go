package gctune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot lays out files under a temporary root: path -> content.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Mount lines as Linux writes them.
const (
	mountV2     = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	mountV1Mem  = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	mountV1CPU  = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	mountHybrid = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	mountProc   = "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	// A container's view of cgroup v1 without a cgroup namespace: the
	// mount's root is the container's cgroup.
	mountV1Docker = "35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n"
)

func TestReadContainer(t *testing.T) {
	const unlimitedV1 = "9223372036854771712\n"
	for _, tc := range []struct {
		name      string
		files     map[string]string
		wantLimit uint64
		wantWhere string // a substring of Where
		wantErr   bool
	}{
		{
			name: "v2, a container with its own cgroup namespace: memory.max at the mount",
			files: map[string]string{
				"proc/self/cgroup":          "0::/\n",
				"proc/self/mountinfo":       mountProc + mountV2,
				"sys/fs/cgroup/memory.max":  "536870912\n",
				"sys/fs/cgroup/cgroup.type": "domain\n",
			},
			wantLimit: 512 << 20,
			wantWhere: "cgroup v2 /sys/fs/cgroup/memory.max",
		},
		{
			name: "v2 max: no limit",
			files: map[string]string{
				"proc/self/cgroup":         "0::/\n",
				"proc/self/mountinfo":      mountV2,
				"sys/fs/cgroup/memory.max": "max\n",
			},
			wantWhere: "cgroup v2 /sys/fs/cgroup/memory.max: max",
		},
		{
			name: "v2, a systemd service: the least limit of the cgroup and its ancestors",
			files: map[string]string{
				"proc/self/cgroup":    "0::/system.slice/wm.service\n",
				"proc/self/mountinfo": mountV2,
				"sys/fs/cgroup/system.slice/wm.service/memory.max":  "max\n",
				"sys/fs/cgroup/system.slice/memory.max":             "1073741824\n",
				"sys/fs/cgroup/system.slice/wm.service/cgroup.type": "domain\n",
			},
			wantLimit: 1 << 30,
			wantWhere: "cgroup v2 /sys/fs/cgroup/system.slice/memory.max",
		},
		{
			name: "v2, the root cgroup: no memory.max file",
			files: map[string]string{
				"proc/self/cgroup":            "0::/\n",
				"proc/self/mountinfo":         mountV2,
				"sys/fs/cgroup/cgroup.procs":  "1\n",
				"sys/fs/cgroup/memory.stat":   "anon 0\n",
				"sys/fs/cgroup/cgroup.events": "populated 1\n",
			},
			wantWhere: "max",
		},
		{
			name: "v2 with a memory.max that is not a number",
			files: map[string]string{
				"proc/self/cgroup":         "0::/\n",
				"proc/self/mountinfo":      mountV2,
				"sys/fs/cgroup/memory.max": "lots\n",
			},
			wantWhere: "cgroup v2 /sys/fs/cgroup/memory.max",
			wantErr:   true,
		},
		{
			name: "v1, limit_in_bytes",
			files: map[string]string{
				"proc/self/cgroup":                               "4:memory:/job\n1:cpu:/\n",
				"proc/self/mountinfo":                            mountV1CPU + mountV1Mem,
				"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "268435456\n",
				"sys/fs/cgroup/memory/job/memory.stat":           "cache 0\nhierarchical_memory_limit 268435456\n",
			},
			wantLimit: 256 << 20,
			wantWhere: "cgroup v1 /sys/fs/cgroup/memory/job/memory.limit_in_bytes",
		},
		{
			name: "v1, a lower limit on an ancestor shows in hierarchical_memory_limit",
			files: map[string]string{
				"proc/self/cgroup":                               "4:memory:/job\n",
				"proc/self/mountinfo":                            mountV1Mem,
				"sys/fs/cgroup/memory/job/memory.limit_in_bytes": unlimitedV1,
				"sys/fs/cgroup/memory/job/memory.stat":           "cache 0\nhierarchical_memory_limit 134217728\n",
			},
			wantLimit: 128 << 20,
			wantWhere: "memory.stat hierarchical_memory_limit",
		},
		{
			name: "v1, the page counter maximum: no limit",
			files: map[string]string{
				"proc/self/cgroup":                               "4:memory:/job\n",
				"proc/self/mountinfo":                            mountV1Mem,
				"sys/fs/cgroup/memory/job/memory.limit_in_bytes": unlimitedV1,
				"sys/fs/cgroup/memory/job/memory.stat":           "hierarchical_memory_limit " + unlimitedV1,
			},
			wantWhere: "no limit",
		},
		{
			name: "v1 in Docker without a cgroup namespace: the mount's root is the container's cgroup",
			files: map[string]string{
				"proc/self/cgroup":                           "4:memory:/docker/abc\n",
				"proc/self/mountinfo":                        mountV1Docker,
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n",
			},
			wantLimit: 1 << 30,
			wantWhere: "cgroup v1 /sys/fs/cgroup/memory/memory.limit_in_bytes",
		},
		{
			name: "hybrid: the memory controller is on v1, which wins over the unified hierarchy",
			files: map[string]string{
				"proc/self/cgroup":                               "4:memory:/job\n0::/job\n",
				"proc/self/mountinfo":                            mountV1Mem + mountHybrid,
				"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "268435456\n",
				"sys/fs/cgroup/unified/job/cgroup.procs":         "1\n",
			},
			wantLimit: 256 << 20,
			wantWhere: "cgroup v1",
		},
		{
			name: "v1 files absent: the memory controller is not mounted",
			files: map[string]string{
				"proc/self/cgroup":    "4:memory:/job\n",
				"proc/self/mountinfo": mountProc + mountV1CPU,
			},
			wantWhere: "no memory controller mounted",
		},
		{
			name: "a cgroup outside the mount's root: not visible, so no limit",
			files: map[string]string{
				"proc/self/cgroup":                           "4:memory:/elsewhere\n",
				"proc/self/mountinfo":                        mountV1Docker,
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n",
			},
			wantWhere: "no memory controller mounted",
		},
		{
			name:      "no /proc/self/cgroup: not in a cgroup (not Linux, or no /proc)",
			files:     map[string]string{"etc/hostname": "x\n"},
			wantWhere: "not in a cgroup",
		},
		{
			name: "cgroups without a memory controller",
			files: map[string]string{
				"proc/self/cgroup":    "1:cpu:/\n",
				"proc/self/mountinfo": mountV1CPU,
			},
			wantWhere: "names no memory cgroup",
		},
		{
			name: "a mountinfo that does not parse",
			files: map[string]string{
				"proc/self/cgroup":    "0::/\n",
				"proc/self/mountinfo": "garbage\n",
			},
			wantWhere: "/proc/self/mountinfo",
			wantErr:   true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ReadContainer(fakeRoot(t, tc.files))
			if c.Limit != tc.wantLimit {
				t.Errorf("Limit = %d, want %d (%+v)", c.Limit, tc.wantLimit, c)
			}
			if !strings.Contains(c.Where, tc.wantWhere) {
				t.Errorf("Where = %q, want it to contain %q", c.Where, tc.wantWhere)
			}
			if (c.Err != nil) != tc.wantErr {
				t.Errorf("Err = %v, want an error: %v", c.Err, tc.wantErr)
			}
		})
	}
}

func TestReadContainerUnescapesMountPoints(t *testing.T) {
	files := map[string]string{
		"proc/self/cgroup":              "0::/\n",
		"proc/self/mountinfo":           `30 23 0:26 / /sys/fs/cg\040roup rw - cgroup2 cgroup2 rw` + "\n",
		"sys/fs/cg roup/memory.max":     "1048576\n",
		"sys/fs/cg roup/cgroup.threads": "",
	}
	c := ReadContainer(fakeRoot(t, files))
	if c.Limit != 1<<20 || c.Where != "cgroup v2 /sys/fs/cg roup/memory.max" {
		t.Errorf("ReadContainer = %+v, want 1 MiB from /sys/fs/cg roup/memory.max", c)
	}
}

// The machine the tests run on: whatever it is, reading it must not fail.
func TestReadContainerOfThisProcess(t *testing.T) {
	c := ReadContainer("/")
	if c.Err != nil {
		t.Errorf("ReadContainer(/) = %+v", c)
	}
	t.Logf("this process: %+v", c)
}

// From the files to the start-up line: a container of 512 MiB under cgroup
// v2 becomes a soft limit of 90% of it, unless GOMEMLIMIT is set.
func TestDecideFromAFakeCgroup(t *testing.T) {
	root := fakeRoot(t, map[string]string{
		"proc/self/cgroup":         "0::/\n",
		"proc/self/mountinfo":      mountV2,
		"sys/fs/cgroup/memory.max": "536870912\n",
	})
	s := Decide(Inputs{Container: ReadContainer(root)})
	if s.LimitFrom != FromContainer || s.Limit != SoftLimit(512<<20) {
		t.Errorf("Decide = limit %d from %s, want %d from the container", s.Limit, s.LimitFrom, SoftLimit(512<<20))
	}
	if want := "memory limit 461 MiB, 90% of the container limit 512 MiB in cgroup v2 /sys/fs/cgroup/memory.max"; !strings.Contains(s.String(), want) {
		t.Errorf("String() = %q, want it to contain %q", s.String(), want)
	}
	s = Decide(Inputs{Env: Env{GOMEMLIMIT: "256MiB"}, Container: ReadContainer(root)})
	if s.LimitFrom != FromEnv {
		t.Errorf("with GOMEMLIMIT set, the limit comes from %s, want env", s.LimitFrom)
	}
}

// The cgroup files are read from outside the process: whatever they hold,
// ReadContainer answers with a limit or a reason (Where), never a panic,
// and never a limit beside an error.
func FuzzReadContainer(f *testing.F) {
	f.Add("0::/\n", mountProc+mountV2, "536870912\n")
	f.Add("0::/\n", mountV2, "max\n")
	f.Add("4:memory:/docker/abc\n", mountV1Docker, "1073741824\n")
	f.Add("4:memory:/\n0::/\n", mountV1Mem+mountHybrid, "-1\n")
	f.Add("0::/../../etc\n", mountV2, "12")
	f.Add("garbage", "1 2 3 - x", "")
	f.Fuzz(func(t *testing.T, cgroup, mountinfo, limit string) {
		root := fakeRoot(t, map[string]string{
			"proc/self/cgroup":                           cgroup,
			"proc/self/mountinfo":                        mountinfo,
			"sys/fs/cgroup/memory.max":                   limit,
			"sys/fs/cgroup/memory/memory.limit_in_bytes": limit,
		})
		c := ReadContainer(root)
		if c.Where == "" {
			t.Fatalf("no Where: %+v", c)
		}
		if c.Limit > 0 && c.Err != nil {
			t.Fatalf("a limit and an error: %+v", c)
		}
	})
}
