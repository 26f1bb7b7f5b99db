package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/bloblang"
	"github.com/redpanda-data/benthos/v4/public/service"
)

// Lint runs the checks start runs (check.go, and validate in config.go), through two Bloblang
// methods that call them. Benthos evaluates lint rules in its global Bloblang
// environment, so the methods are registered there, once, before the spec
// that uses them is built; they are pure and read nothing but their input.
const (
	methodCheckField = "kafka_watermark_check_field"
	methodLintConfig = "kafka_watermark_lint"
)

// fieldRule is the LintRule of the field at path: its field check, on the
// value as written, reported at the field's line.
func fieldRule(path string) string {
	return fmt.Sprintf("root = this.%s(%q)", methodCheckField, path)
}

// lintRule is the spec's lint rule: everything parseConfig refuses that no
// field's own rule reports (rules across fields, values Benthos cannot read),
// reported at the input's line.
var lintRule = "root = this." + methodLintConfig + "()"

// registerLintMethods registers the methods, once.
func registerLintMethods() error {
	lintMethods.once.Do(func() { lintMethods.err = registerLintMethodsNow() })
	return lintMethods.err
}

var lintMethods struct {
	once sync.Once
	err  error
}

func registerLintMethodsNow() error {
	err := bloblang.RegisterMethodV2(methodCheckField,
		bloblang.NewPluginSpec().
			Description("Internal to the kafka_watermark input's lint rules: the errors of one field's value, as the input's start finds them.").
			Param(bloblang.NewStringParam("field").Description("The field's dotted path.")),
		func(args *bloblang.ParsedParams) (bloblang.Method, error) {
			path, err := args.GetString("field")
			if err != nil {
				return nil, err
			}
			check, ok := fieldChecks[path]
			if !ok {
				return nil, fmt.Errorf("no check for field %s", path)
			}
			return func(v any) (any, error) {
				if err := check(path, v); err != nil {
					return messages(err), nil
				}
				return nil, nil
			}, nil
		})
	if err != nil {
		return err
	}
	return bloblang.RegisterMethodV2(methodLintConfig,
		bloblang.NewPluginSpec().
			Description("Internal to the kafka_watermark input's lint rule: the errors the input's start finds in a config, but for those of a single field."),
		func(*bloblang.ParsedParams) (bloblang.Method, error) {
			return func(v any) (any, error) { return lintConfig(v), nil }, nil
		})
}

// lintConfig parses the input's config as written (lint sees it without
// defaults; ParseYAML fills them in, as at start) and returns parseConfig's
// errors, leaving out the field checks' (each field's rule reports those).
// The tls block is left out: its files are read at start, and lint reads no
// files (Benthos lints the block's fields itself).
func lintConfig(v any) []any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil // not an object: Benthos says so
	}
	conf := withoutNulls(m)
	delete(conf, fieldTLS)
	raw, err := json.Marshal(conf) // JSON is YAML
	if err != nil {
		return []any{err.Error()}
	}
	pc, err := lintSpec().ParseYAML(string(raw), nil)
	if err == nil {
		_, err = parseConfig(pc)
	}
	var out []any
	for _, e := range flatten(err) {
		var fe fieldError
		if !errors.As(e, &fe) || !written(m, fe.path) {
			out = append(out, e.Error())
		}
	}
	return out
}

// withoutNulls copies m without its null values: lint gives an empty or
// absent list as a nil slice, which JSON would write as null, which no list
// field parses.
func withoutNulls(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			continue
		case []any:
			if x == nil {
				continue
			}
		case map[string]any:
			v = withoutNulls(x)
		}
		out[k] = v
	}
	return out
}

// written tells whether the field at the dotted path is in conf as written,
// where its own rule reports it.
func written(conf map[string]any, path string) bool {
	var v any = conf
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[k]; !ok {
			return false
		}
	}
	// Lint gives an absent list without a default as [] (and an absent
	// required scalar as null): those are reported here, at the input's line,
	// so an explicit [] is reported at both lines.
	if l, ok := v.([]any); ok {
		return len(l) > 0
	}
	return v != nil
}

// lintSpec is the spec lintConfig parses with, built once.
func lintSpec() *service.ConfigSpec {
	lintSpecs.once.Do(func() { lintSpecs.spec = ConfigSpec() })
	return lintSpecs.spec
}

var lintSpecs struct {
	once sync.Once
	spec *service.ConfigSpec
}

// flatten lists the errors joined in err.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// messages is err as lint messages, one per joined error.
func messages(err error) []any {
	var out []any
	for _, e := range flatten(err) {
		out = append(out, strings.TrimSpace(e.Error()))
	}
	return out
}
