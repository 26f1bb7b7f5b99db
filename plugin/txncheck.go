package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// The rules of exactly_once that span components, which no component's
// own lint can see: checked on the whole config when `run` starts
// (CheckExactlyOnceConfig, installed by the binary with
// service.CLIOptOnConfigParse), before anything connects. The output's
// Connect refuses the same (a group no input registered, a second bound
// output) in streams mode, where each stream's config is parsed apart.

// CheckExactlyOnceConfig checks the main config pc (its input, output and
// resources) for the exactly_once rules that span components.
func CheckExactlyOnceConfig(pc *service.ParsedConfig) error {
	root := map[string]any{}
	for _, f := range []string{"input", "output", "input_resources", "output_resources"} {
		if pc.Contains(f) {
			if v, err := pc.FieldAny(f); err == nil {
				root[f] = plain(v)
			}
		}
	}
	return CheckExactlyOnce(root)
}

// plain turns what FieldAny gives for a component of the main config, a
// YAML node (benthos v4.60.0 hands the raw node of component fields), into
// plain maps and lists, in lists too; other values are returned as they
// are. The node is used through its Decode method, so that this package
// names no YAML library.
func plain(v any) any {
	switch t := v.(type) {
	case interface{ Decode(any) error }:
		var out any
		if err := t.Decode(&out); err == nil {
			return out
		}
		return nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// CheckExactlyOnce checks a config, as generic values (a map of the
// top-level fields input, output, input_resources, output_resources):
//
//   - an output bound to a group (exactly_once.consumer_group) needs a
//     kafka_watermark input with exactly_once: true consuming that group;
//   - one output per group;
//   - a bound output cannot sit in a broker (fan_out or fan_out_sequential,
//     the broker's default pattern fan_out) beside other outputs: each
//     message would be acknowledged once every output took it, and the
//     others would take it again after an abort.
func CheckExactlyOnce(root map[string]any) error {
	inputs := map[string]bool{}
	for _, f := range []string{"input", "input_resources"} {
		walk(root[f], func(name string, conf map[string]any) {
			if name != InputName {
				return
			}
			if on, _ := conf[fieldExactlyOnce].(bool); on {
				if g, ok := conf[fieldConsumerGroup].(string); ok {
					inputs[g] = true
				}
			}
		})
	}
	var errs []error
	bound := map[string]int{}
	for _, f := range []string{"output", "output_resources"} {
		walk(root[f], func(name string, conf map[string]any) {
			switch name {
			case OutputName:
				if g, ok := boundGroup(conf); ok {
					bound[g]++
				}
			case "broker":
				pattern, _ := conf["pattern"].(string)
				outs, _ := conf["outputs"].([]any)
				if (pattern == "" || strings.HasPrefix(pattern, "fan_out")) && len(outs) > 1 {
					for _, o := range outs {
						walk(o, func(name string, conf map[string]any) {
							if g, ok := boundGroup(conf); ok && name == OutputName {
								errs = append(errs, fmt.Errorf("output: a kafka_watermark output bound to consumer_group %q (exactly_once) is in a broker with pattern %s beside %d other output(s): they would write its messages again after every abort; give the bound output a stream of its own", g, orDefault(pattern, "fan_out"), len(outs)-1))
							}
						})
					}
				}
			}
		})
	}
	groups := make([]string, 0, len(bound))
	for g := range bound {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	for _, g := range groups {
		if !inputs[g] {
			errs = append(errs, fmt.Errorf("output: a kafka_watermark output is bound to consumer_group %q (exactly_once.consumer_group), but no kafka_watermark input of this config consumes that group with exactly_once: true", g))
		}
		if bound[g] > 1 {
			errs = append(errs, fmt.Errorf("output: %d kafka_watermark outputs are bound to consumer_group %q (exactly_once.consumer_group); one group, one bound output", bound[g], g))
		}
	}
	return errors.Join(errs...)
}

// boundGroup is the exactly_once.consumer_group of an output's config.
func boundGroup(conf map[string]any) (string, bool) {
	eo, ok := conf[fieldExactlyOnce].(map[string]any)
	if !ok {
		return "", false
	}
	g, ok := eo[fieldConsumerGroup].(string)
	return g, ok && g != ""
}

// walk calls fn for every component config under v: each key of a map
// whose value is a map, as the component's name and its config; it walks
// lists and maps to any depth.
func walk(v any, fn func(name string, conf map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			if m, ok := sub.(map[string]any); ok {
				fn(k, m)
			}
			walk(sub, fn)
		}
	case []any:
		for _, sub := range t {
			walk(sub, fn)
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
