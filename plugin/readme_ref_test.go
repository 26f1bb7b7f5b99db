package plugin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// refRow is one row of the generated config reference.
type refRow struct{ name, typ, def, desc string }

// configReferenceRows parses configReference's table.
func configReferenceRows(t *testing.T) []refRow {
	t.Helper()
	var rows []refRow
	for _, line := range strings.Split(configReference(t), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		// Descriptions escape their pipes: split on the unescaped ones.
		cells := strings.Split(strings.ReplaceAll(strings.Trim(line, "| "), `\|`, "\x00"), " | ")
		require.Len(t, cells, 4, "reference row %q", line)
		rows = append(rows, refRow{
			name: strings.Trim(cells[0], "`"), typ: cells[1], def: cells[2],
			desc: strings.ReplaceAll(cells[3], "\x00", `\|`),
		})
	}
	require.NotEmpty(t, rows)
	return rows
}

// lintBaseConfig is the least a config sets to lint clean: every field the
// reference calls required, plus those listed in lintBaseNotRequired.
func lintBaseConfig() map[string]any {
	return map[string]any{
		fieldSeedBrokers:   []any{"localhost:9092"},
		fieldTopics:        []any{"orders"},
		fieldConsumerGroup: "g",
		fieldSASL:          []any{map[string]any{fieldSASLMechanism: saslNone}},
	}
}

// lintBaseNotRequired are the fields lintBaseConfig sets though the reference
// does not call them required, and why.
var lintBaseNotRequired = map[string]string{
	fieldTopics: "lint requires topics or regexp_topics_include, neither of them alone",
	fieldSASL:   "an entry, so that the fields of sasl[] are linted too",
}

// lintJSON lints kafka_watermark fields, given as a Go value, through the
// real Benthos environment, as `watermark-connect lint` does. JSON is YAML.
func lintJSON(t *testing.T, env *service.Environment, fields map[string]any) []string {
	t.Helper()
	raw, err := json.Marshal(fields)
	require.NoError(t, err)
	return lintFields(t, env, string(raw))
}

// withoutField returns a deep copy of conf without the field at a full name
// as the reference spells it ("sasl[].mechanism": from every entry), and
// whether conf held it anywhere.
func withoutField(t *testing.T, conf any, name string) (any, bool) {
	t.Helper()
	seg, rest, nested := strings.Cut(name, ".")
	require.NotContains(t, seg, "<name>", "%s: fields under a map are not supported here", name)
	key, isArray := strings.CutSuffix(seg, "[]")
	require.False(t, strings.HasSuffix(key, "[]"), "%s: arrays of arrays are not supported here", name)
	m, ok := conf.(map[string]any)
	if !ok {
		return conf, false
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	v, ok := m[key]
	if !ok {
		return out, false
	}
	if !nested {
		require.False(t, isArray, "%s: malformed name", name)
		delete(out, key)
		return out, true
	}
	if !isArray {
		var found bool
		out[key], found = withoutField(t, v, rest)
		return out, found
	}
	list, _ := v.([]any)
	var found bool
	newList := make([]any, len(list))
	for i, e := range list {
		var f bool
		newList[i], f = withoutField(t, e, rest)
		found = found || f
	}
	out[key] = newList
	return out, found
}

// The reference calls required exactly the fields lint requires: a config
// without any other field lints clean, and leaving out any field it calls
// required fails lint, naming the field.
func TestReadmeRequiredFields(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	base := lintBaseConfig()
	require.Empty(t, lintJSON(t, env, base),
		"lintBaseConfig lints clean: if lint now requires another field, the reference must call it required (requiredByLintRule) and lintBaseConfig set it")

	rows := configReferenceRows(t)
	required := map[string]bool{}
	for _, r := range rows {
		if r.def != refRequired {
			continue
		}
		required[r.name] = true
		t.Run(r.name, func(t *testing.T) {
			conf, found := withoutField(t, base, r.name)
			require.True(t, found, "the reference calls %s required, but lintBaseConfig, which lints clean, does not set it", r.name)
			lints := lintJSON(t, env, conf.(map[string]any))
			leaf := r.name[strings.LastIndex(r.name, ".")+1:]
			named := false
			for _, l := range lints {
				named = named || strings.Contains(l, "field "+leaf+" ") || strings.Contains(l, ") "+leaf+":")
			}
			require.True(t, named, "the reference calls %s required, but lint without it = %q", r.name, lints)
		})
	}

	// Every field lintBaseConfig sets is required, or it says why not: so a
	// config with only the required fields (and those) lints clean.
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				name := path + k
				if _, ok := lintBaseNotRequired[name]; !ok {
					require.True(t, required[name], "lintBaseConfig sets %s, which the reference does not call required: list it in lintBaseNotRequired with why", name)
				}
				if l, ok := c.([]any); ok {
					for _, e := range l {
						walk(name+"[].", e)
					}
					continue
				}
				walk(name+".", c)
			}
		}
	}
	walk("", base)
	for name := range lintBaseNotRequired {
		require.False(t, required[name], "%s is in lintBaseNotRequired but the reference calls it required", name)
	}
}

// The default column says what parsing a config without the field gives:
// "optional" fields are unset, every other one left out is filled in. And the
// objects the user report named (tls, nack_retry), left out of
// lintBaseConfig as of config/minimal.yaml, lint clean.
func TestReadmeDefaultsAsParsed(t *testing.T) {
	rows := map[string]refRow{}
	for _, r := range configReferenceRows(t) {
		rows[r.name] = r
	}
	for _, name := range []string{fieldTLS, fieldNackRetry} {
		require.Equal(t, refFieldDefaults, rows[name].def, "default column of %s", name)
		require.Equal(t, "object", rows[name].typ, "type of %s", name)
		_, set := lintBaseConfig()[name]
		require.False(t, set)
	}
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	require.Empty(t, lintJSON(t, env, lintBaseConfig()))

	raw, err := json.Marshal(lintBaseConfig())
	require.NoError(t, err)
	pc, err := ConfigSpec().ParseYAML(string(raw), nil)
	require.NoError(t, err)
	checked := 0
	for name, r := range rows {
		if r.def == refRequired {
			continue // set in lintBaseConfig
		}
		parent, leaf := "", name
		if i := strings.LastIndex(name, "."); i >= 0 {
			parent, leaf = name[:i], name[i+1:]
		}
		ns, ok := parsedAt(t, pc, parent)
		if !ok {
			continue // under a field that is unset, or an empty list
		}
		_, set := lintBaseConfig()[name]
		if set {
			continue
		}
		checked++
		require.Equal(t, r.def != refOptional, ns.Contains(leaf), "%s, left out: the reference says %s", name, r.def)
	}
	require.Greater(t, checked, 50)
}

// parsedAt returns the parsed object at a full name as the reference spells
// it, the first entry of each list on the way, and whether there is one.
func parsedAt(t *testing.T, pc *service.ParsedConfig, name string) (*service.ParsedConfig, bool) {
	t.Helper()
	if name == "" {
		return pc, true
	}
	for _, seg := range strings.Split(name, ".") {
		key, isList := strings.CutSuffix(seg, "[]")
		if !pc.Contains(key) {
			return nil, false
		}
		if !isList {
			pc = pc.Namespace(key)
			continue
		}
		list, err := pc.FieldObjectList(key)
		require.NoError(t, err, name)
		if len(list) == 0 {
			return nil, false
		}
		pc = list[0]
	}
	return pc, true
}

func TestReadmeTypes(t *testing.T) {
	want := map[string]string{
		fieldSeedBrokers:                        "array of string",
		fieldSASL:                               "array of object",
		fieldSASL + "[]." + fieldSASLExtensions: "map of string",
		fieldSASL + "[]." + fieldSASLAWS:        "object",
		fieldTLS + ".client_certs":              "array of object",
		fieldConsumerGroup:                      "string",
		fieldMaxPendingBatches:                  "int",
	}
	got := map[string]string{}
	for _, r := range configReferenceRows(t) {
		got[r.name] = r.typ
		require.NotContains(t, r.typ, "unknown", "type of %s", r.name)
		require.NotEqual(t, "array", r.typ, "type of %s: array of what", r.name)
	}
	for name, typ := range want {
		require.Equal(t, typ, got[name], "type of %s", name)
	}
}

// No AsciiDoc link survives into the Markdown reference.
func TestReadmeReferenceHasNoAsciidoc(t *testing.T) {
	for _, r := range configReferenceRows(t) {
		for _, bad := range []string{"xref:", "adoc[", "link:"} {
			require.NotContains(t, r.desc, bad, "description of %s", r.name)
		}
		require.NotRegexp(t, `https?://[^\s\[\]()]+\[`, r.desc, "description of %s: an AsciiDoc URL macro", r.name)
	}
}

func TestAsciidocLinks(t *testing.T) {
	for in, want := range map[string]string{
		"A xref:guides:bloblang/about.adoc[Bloblang query] that":                     "A [Bloblang query](https://docs.redpanda.com/redpanda-connect/guides/bloblang/about/) that",
		"A list of xref:components:processors/about.adoc[processors] to":             "A list of [processors](https://docs.redpanda.com/redpanda-connect/components/processors/about/) to",
		"see xref:configuration:interpolation.adoc#bloblang-queries[interpolation].": "see [interpolation](https://docs.redpanda.com/redpanda-connect/configuration/interpolation/#bloblang-queries).",
		"xref:components:inputs/about.adoc[]":                                        "<https://docs.redpanda.com/redpanda-connect/components/inputs/about/>",
		"both xref:a:b.adoc[one] and xref:c:d/e.adoc[two]":                           "both [one](https://docs.redpanda.com/redpanda-connect/a/b/) and [two](https://docs.redpanda.com/redpanda-connect/c/d/e/)",
		"read link:https://example.com/x?y=1[the docs] first":                        "read [the docs](https://example.com/x?y=1) first",
		"read link:https://example.com/x[the docs^]":                                 "read [the docs](https://example.com/x)",
		"read https://example.com/x[the docs]":                                       "read [the docs](https://example.com/x)",
		"plain https://example.com/x and [markdown](https://e.com/)":                 "plain https://example.com/x and [markdown](https://e.com/)",
		"no links, `foo[0]` stays":                                                   "no links, `foo[0]` stays",
	} {
		require.Equal(t, want, asciidocLinks(in), "asciidocLinks(%q)", in)
	}
}
