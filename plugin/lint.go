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

// Lint runs the checks start runs (check.go, and validate in config.go and
// output_config.go), through Bloblang methods that call them: per component,
// one that checks a field and one that parses the whole config. Benthos
// evaluates lint rules in its global Bloblang environment, so the methods
// are registered there, once, before the specs that use them are built; they
// are pure and read nothing but their input.
//
// The input's methods keep the names they had before the output came; the
// output's are named after it.
const (
	methodCheckField       = "kafka_watermark_check_field"
	methodLintConfig       = "kafka_watermark_lint"
	methodOutputCheckField = "kafka_watermark_output_check_field"
	methodOutputLintConfig = "kafka_watermark_output_lint"
	methodShareCheckField  = "kafka_share_check_field"
	methodShareLintConfig  = "kafka_share_lint"
)

// lintTarget is what one component's lint runs: the checks its fields'
// rules call, and how its whole config is parsed and validated.
type lintTarget struct {
	checkMethod, lintMethod string
	checks                  map[string]fieldCheck
	required                map[string]bool // checked when absent too (checkFields)
	spec                    func() *service.ConfigSpec
	parse                   func(*service.ParsedConfig) error
}

// lintTargets returns the lint targets of kafka_watermark's input and
// output and of kafka_share. A function,
// not a variable: the specs it names register the methods that read it.
func lintTargets() []lintTarget {
	return []lintTarget{
		{
			checkMethod: methodCheckField, lintMethod: methodLintConfig,
			checks: fieldChecks, required: requiredFields,
			spec:  func() *service.ConfigSpec { return lintSpecs.get(ConfigSpec) },
			parse: func(pc *service.ParsedConfig) error { _, err := parseConfig(pc); return err },
		},
		{
			checkMethod: methodOutputCheckField, lintMethod: methodOutputLintConfig,
			checks: outputFieldChecks, required: outputRequiredFields,
			spec:  func() *service.ConfigSpec { return outputLintSpecs.get(OutputConfigSpec) },
			parse: func(pc *service.ParsedConfig) error { _, err := parseOutputConfig(pc); return err },
		},
		{
			checkMethod: methodShareCheckField, lintMethod: methodShareLintConfig,
			checks: shareFieldChecks, required: shareRequiredFields,
			spec:  func() *service.ConfigSpec { return shareLintSpecs.get(ShareConfigSpec) },
			parse: func(pc *service.ParsedConfig) error { _, err := parseShareConfig(pc); return err },
		},
	}
}

// fieldRule is the LintRule of the input's field at path: its field check,
// on the value as written, reported at the field's line.
func fieldRule(path string) string {
	return fmt.Sprintf("root = this.%s(%q)", methodCheckField, path)
}

// outputFieldRule is fieldRule for the output's field at path.
func outputFieldRule(path string) string {
	return fmt.Sprintf("root = this.%s(%q)", methodOutputCheckField, path)
}

// lintRule and outputLintRule are the specs' lint rules: everything parsing
// refuses that no field's own rule reports (rules across fields, values
// Benthos cannot read), reported at the component's line.
var (
	lintRule       = "root = this." + methodLintConfig + "()"
	outputLintRule = "root = this." + methodOutputLintConfig + "()"
	shareLintRule  = "root = this." + methodShareLintConfig + "()"
)

// registerLintMethods registers the methods of every component, once.
func registerLintMethods() error {
	lintMethods.once.Do(func() {
		for _, target := range lintTargets() {
			if lintMethods.err = target.register(); lintMethods.err != nil {
				return
			}
		}
	})
	return lintMethods.err
}

var lintMethods struct {
	once sync.Once
	err  error
}

func (target lintTarget) register() error {
	err := bloblang.RegisterMethodV2(target.checkMethod,
		bloblang.NewPluginSpec().
			Description("Internal to the kafka_watermark lint rules: the errors of one field's value, as the component's start finds them.").
			Param(bloblang.NewStringParam("field").Description("The field's dotted path.")),
		func(args *bloblang.ParsedParams) (bloblang.Method, error) {
			path, err := args.GetString("field")
			if err != nil {
				return nil, err
			}
			check, ok := target.checks[path]
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
	return bloblang.RegisterMethodV2(target.lintMethod,
		bloblang.NewPluginSpec().
			Description("Internal to the kafka_watermark lint rules: the errors the component's start finds in a config, but for those of a single field."),
		func(*bloblang.ParsedParams) (bloblang.Method, error) {
			return func(v any) (any, error) { return target.lintConfig(v), nil }, nil
		})
}

// lintConfig parses the component's config as written (lint sees it without
// defaults; ParseYAML fills them in, as at start) and returns the parse's
// errors, leaving out the field checks' (each field's rule reports those).
// The tls block is left out: its files are read at start, and lint reads no
// files (Benthos lints the block's fields itself).
func (target lintTarget) lintConfig(v any) []any {
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
	pc, err := target.spec().ParseYAML(string(raw), nil)
	if err == nil {
		err = target.parse(pc)
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

// specOnce is a spec built once, for lintConfig to parse with.
type specOnce struct {
	once sync.Once
	spec *service.ConfigSpec
}

func (s *specOnce) get(build func() *service.ConfigSpec) *service.ConfigSpec {
	s.once.Do(func() { s.spec = build() })
	return s.spec
}

var lintSpecs, outputLintSpecs, shareLintSpecs specOnce

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
