package version

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Release is the newest "## [X.Y.Z]" heading of CHANGELOG.md.
func TestReleaseIsTheChangelogsNewest(t *testing.T) {
	raw, err := os.ReadFile("../../CHANGELOG.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\]`).FindSubmatch(raw)
	require.NotNil(t, m, "CHANGELOG.md has no released version heading")
	assert.Equal(t, string(m[1]), Release, "version.Release must be CHANGELOG.md's newest release")
}

func TestString(t *testing.T) {
	settings := func(rev, tm, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: tm}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "d625487abcdef0123456789abcdef0123456789a"
	build := func(v string, s []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/watermark-connect/watermark-connect", Version: v}, Settings: s}
	}
	for _, tc := range []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		want    string
	}{
		{"stamped wins", "v9.9.9", build("v0.1.0", nil), "v9.9.9"},
		{"built from the release tag", "", build(Tag, settings(rev, "2026-11-30T10:00:00Z", "false")), Tag},
		{"go install of another tag", "", build("v0.3.0", nil), "v0.3.0"},
		{"a commit after the tag, as Go says it", "", build("v0.1.1-0.20261203065504-d625487abcde", nil),
			"v0.1.1-0.20261203065504-d625487abcde" + untagged},
		{"no tag in the history: rebased on Release", "", build("v0.0.0-20261203065504-d625487abcde+dirty",
			settings(rev, "2026-12-03T06:55:04Z", "true")), "v0.1.1-0.20261203065504-d625487abcde+dirty" + untagged},
		{"devel with VCS settings", "", build("(devel)", settings(rev, "2026-12-03T06:55:04+01:00", "false")),
			"v0.1.1-0.20261203055504-d625487abcde" + untagged},
		{"devel without VCS settings", "", build("(devel)", nil), Release + "-dev (no version control information)"},
		{"no build info", "", nil, Release + "-dev (no version control information)"},
		{"a malformed VCS time", "", build("(devel)", settings(rev, "yesterday", "false")), Release + "-dev (no version control information)"},
		{"a short revision", "", build("(devel)", settings("abc", "2026-12-03T06:55:04Z", "false")), Release + "-dev (no version control information)"},
		{"a pre-release tag is not a release", "", build("v0.2.0-rc.1", nil), "v0.2.0-rc.1" + untagged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, String(tc.stamped, tc.info))
		})
	}
}

func TestDate(t *testing.T) {
	info := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.time", Value: "2026-12-03T06:55:04Z"}}}
	assert.Equal(t, "2001-02-03T04:05:06Z", Date("2001-02-03T04:05:06Z", info))
	assert.Equal(t, "2026-12-03T06:55:04Z (commit time)", Date("", info))
	assert.Equal(t, "unknown", Date("", nil))
}
