// Package version says which build of watermark-connect is running: a
// release, or a commit after one.
//
// The scheme: a release is a tag vX.Y.Z (Semantic Versioning), listed in
// CHANGELOG.md under its number; a binary built from that tag prints exactly
// that version. Any other commit prints the version Go gives a commit after
// the release, a pseudo-version vX.Y.(Z+1)-0.<commit time>-<commit> (with
// +dirty when the tree had uncommitted changes), and says that it is not a
// release. A version given at build time (-ldflags -X main.version=...)
// wins over both.
//
// Everything here is a pure function of its arguments, safe for concurrent
// use.
package version

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Release is the newest release listed in CHANGELOG.md, without its "v".
// TestReleaseIsTheChangelogsNewest keeps the two equal: releasing means
// adding the CHANGELOG heading, changing this, and tagging the commit
// "v" + Release.
const Release = "0.1.0"

// Tag is the git tag of Release.
const Tag = "v" + Release

// String returns the version to print. stamped is the version given at
// build time ("" if none); info is the binary's build information (nil if
// it has none). The first that applies:
//
//   - stamped, as given;
//   - the module version Go recorded (go install ...@vX.Y.Z, or go build in
//     a checkout, which Go 1.24+ stamps from the VCS): a release tag as is,
//     anything else followed by " (untagged commit ...)";
//   - a pseudo-version computed from the VCS settings Go recorded
//     (vcs.revision, vcs.time, vcs.modified), relative to Release;
//   - Release + "-dev (no version control information)".
func String(stamped string, info *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if info == nil {
		return Release + "-dev (no version control information)"
	}
	v := info.Main.Version
	if v != "" && v != "(devel)" {
		if isRelease(v) {
			return v
		}
		if strings.HasPrefix(v, "v0.0.0-") {
			// No release tag reached the module's history (Go's base for
			// a pseudo-version is then v0.0.0): rebase it on Release.
			if pv, ok := pseudo(vcs(info)); ok {
				v = pv
			}
		}
		return v + untagged
	}
	if pv, ok := pseudo(vcs(info)); ok {
		return pv + untagged
	}
	return Release + "-dev (no version control information)"
}

const untagged = " (untagged commit after " + Tag + ", not a release)"

// Date returns the build date to print: stamped if given, else the commit
// time Go recorded, else "unknown".
func Date(stamped string, info *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if s := vcs(info); s.time != "" {
		return s.time + " (commit time)"
	}
	return "unknown"
}

type vcsInfo struct {
	revision, time string
	modified       bool
}

func vcs(info *debug.BuildInfo) vcsInfo {
	var s vcsInfo
	if info == nil {
		return s
	}
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			s.revision = kv.Value
		case "vcs.time":
			s.time = kv.Value
		case "vcs.modified":
			s.modified = kv.Value == "true"
		}
	}
	return s
}

// pseudo returns Go's pseudo-version of a commit after Release:
// v<major>.<minor>.<patch+1>-0.<yyyymmddhhmmss>-<12 hex of the revision>.
func pseudo(s vcsInfo) (string, bool) {
	if len(s.revision) < 12 {
		return "", false
	}
	t, err := time.Parse(time.RFC3339, s.time)
	if err != nil {
		return "", false
	}
	major, minor, patch, ok := parse(Release)
	if !ok {
		return "", false
	}
	v := fmt.Sprintf("v%d.%d.%d-0.%s-%s", major, minor, patch+1, t.UTC().Format("20060102150405"), s.revision[:12])
	if s.modified {
		v += "+dirty"
	}
	return v, true
}

// isRelease reports whether v is a plain vX.Y.Z tag.
func isRelease(v string) bool {
	_, _, _, ok := parse(strings.TrimPrefix(v, "v"))
	return strings.HasPrefix(v, "v") && ok
}

// parse splits "X.Y.Z" (digits only, no pre-release or build part).
func parse(s string) (major, minor, patch int, ok bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return 0, 0, 0, false
		}
		v, err := strconv.Atoi(p)
		if err != nil {
			return 0, 0, 0, false
		}
		n[i] = v
	}
	return n[0], n[1], n[2], true
}
