package gctune

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Container is the memory limit of the cgroup the process runs in, as
// ReadContainer found it.
type Container struct {
	// Limit is the limit in bytes; 0 when there is none (no cgroup, no
	// memory controller, or "max").
	Limit uint64
	// Where says what was read: "cgroup v2 /sys/fs/cgroup/memory.max", or
	// why there is no limit ("not in a cgroup").
	Where string
	// Err is a cgroup file that could not be read or parsed; Limit is then 0.
	Err error
}

// v1Unlimited is the smallest value cgroup v1 reports for "no limit": the
// kernel's page counter maximum (LONG_MAX pages rounded down to a page) in
// bytes, 9223372036854771712 with 4 KiB pages.
var v1Unlimited = uint64(math.MaxInt64/os.Getpagesize()) * uint64(os.Getpagesize())

// ReadContainer reads the memory limit of the process's cgroup under root:
// "/" for the real one, a directory laid out the same way in tests. It
// follows /proc/self/cgroup and /proc/self/mountinfo to the cgroup's
// directory, as seen through this mount namespace, and reads:
//
//   - cgroup v1 (a hierarchy with the memory controller, used when there is
//     one, as on hybrid hosts where v2 has no memory controller): the least of
//     memory.limit_in_bytes and memory.stat's hierarchical_memory_limit, which
//     covers the ancestors' limits; the kernel's page counter maximum is no
//     limit;
//   - cgroup v2: memory.max of the cgroup and of each ancestor up to the
//     mount's root, the least of them; "max" is no limit, a missing file
//     (the root cgroup has none) is skipped.
//
// The paths in Where are as the process sees them (root not included). The
// selection follows the functions selectMemoryController,
// walkCgroupV2Hierarchy, readMemoryLimitV1FromPath and resolveCgroupPath of
// github.com/KimMachineGun/automemlimit v1.0.2's memlimit package, whose
// reader cannot be pointed at another root; package doc says why this one
// is ours.
func ReadContainer(root string) Container {
	cgroups, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if errors.Is(err, fs.ErrNotExist) {
		return Container{Where: "no /proc/self/cgroup: not in a cgroup"}
	} else if err != nil {
		return Container{Where: "/proc/self/cgroup", Err: err}
	}
	mountinfo, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return Container{Where: "/proc/self/mountinfo", Err: err}
	}
	mounts, err := parseMountinfo(mountinfo)
	if err != nil {
		return Container{Where: "/proc/self/mountinfo", Err: err}
	}
	var v1Path, v2Path string
	for line := range strings.Lines(string(cgroups)) {
		id, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id != "0" && slices.Contains(strings.Split(controllers, ","), "memory") && v1Path == "":
			v1Path = path
		case id == "0" && controllers == "" && v2Path == "":
			v2Path = path
		}
	}
	switch {
	case v1Path != "":
		return readV1(root, v1Path, mounts)
	case v2Path != "":
		return readV2(root, v2Path, mounts)
	}
	return Container{Where: "/proc/self/cgroup names no memory cgroup: not in a container"}
}

// mount is a line of /proc/self/mountinfo: the directory of the mounted
// filesystem that is its root, where it is mounted, its type and its super
// options (for cgroup v1, the controllers).
type mount struct {
	root, point, fstype, options string
}

func parseMountinfo(b []byte) ([]mount, error) {
	var out []mount
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if line == "" {
			continue
		}
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the
		// optional fields end at " - ".
		before, after, ok := strings.Cut(line, " - ")
		f1, f2 := strings.Fields(before), strings.Fields(after)
		if !ok || len(f1) < 5 || len(f2) < 1 {
			return nil, fmt.Errorf("mountinfo line %q: want \"<id> <parent> <dev> <root> <mount point> ... - <type> ...\"", line)
		}
		m := mount{root: unescape(f1[3]), point: unescape(f1[4]), fstype: f2[0]}
		if len(f2) >= 3 {
			m.options = f2[2]
		}
		out = append(out, m)
	}
	return out, nil
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// cgroupDir is where the cgroup path (from /proc/self/cgroup) is under a
// mount of its hierarchy whose root is m.root; "" when the cgroup is not
// below that root (a mount of another part of the hierarchy).
func cgroupDir(m mount, path string) string {
	if m.root == path {
		return m.point
	}
	prefix := strings.TrimSuffix(m.root, "/") + "/"
	rel, ok := strings.CutPrefix(path, prefix)
	if !ok || !filepath.IsLocal(rel) {
		return ""
	}
	return filepath.Join(m.point, rel)
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func readV1(root, path string, mounts []mount) Container {
	for _, m := range mounts {
		if m.fstype != "cgroup" || !slices.Contains(strings.Split(m.options, ","), "memory") {
			continue
		}
		dir := cgroupDir(m, path)
		if dir == "" || !isDir(filepath.Join(root, dir)) {
			continue
		}
		file := filepath.Join(dir, "memory.limit_in_bytes")
		limit, err := readUint(filepath.Join(root, file))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return Container{Where: "cgroup v1 " + file, Err: err}
		}
		stat := filepath.Join(dir, "memory.stat")
		if h, ok, err := hierarchicalLimit(filepath.Join(root, stat)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Container{Where: "cgroup v1 " + stat, Err: err}
		} else if ok && h < limit {
			limit, file = h, stat+" hierarchical_memory_limit"
		}
		if limit >= v1Unlimited {
			return Container{Where: "cgroup v1 " + file + ": no limit"}
		}
		return Container{Limit: limit, Where: "cgroup v1 " + file}
	}
	return Container{Where: "cgroup v1 " + path + ": no memory controller mounted for it"}
}

func readV2(root, path string, mounts []mount) Container {
	for _, m := range mounts {
		if m.fstype != "cgroup2" {
			continue
		}
		dir := cgroupDir(m, path)
		if dir == "" || !isDir(filepath.Join(root, dir)) {
			continue
		}
		c := Container{Where: "cgroup v2 " + filepath.Join(dir, "memory.max") + ": max"}
		for d := dir; ; d = filepath.Dir(d) {
			file := filepath.Join(d, "memory.max")
			b, err := os.ReadFile(filepath.Join(root, file))
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return Container{Where: "cgroup v2 " + file, Err: err}
			case strings.TrimSpace(string(b)) == "max":
			default:
				n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
				if err != nil {
					return Container{Where: "cgroup v2 " + file, Err: fmt.Errorf("memory.max %q: not a number of bytes or \"max\"", bytes.TrimSpace(b))}
				}
				if c.Limit == 0 || n < c.Limit {
					c = Container{Limit: n, Where: "cgroup v2 " + file}
				}
			}
			if d == m.point || d == filepath.Dir(d) {
				break
			}
		}
		return c
	}
	return Container{Where: "cgroup v2 " + path + ": no cgroup2 mount shows it"}
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: not a number of bytes", bytes.TrimSpace(b))
	}
	return n, nil
}

// hierarchicalLimit reads memory.stat's hierarchical_memory_limit; ok is
// false when the file has none.
func hierarchicalLimit(path string) (limit uint64, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, _ := strings.Cut(s.Text(), " ")
		if k != "hierarchical_memory_limit" {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("hierarchical_memory_limit %q: not a number of bytes", v)
		}
		return n, true, nil
	}
	return 0, false, s.Err()
}
