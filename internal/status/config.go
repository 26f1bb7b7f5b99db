package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
	"github.com/watermark-connect/watermark-connect/plugin"
)

// Field names of the kafka_watermark input that status reads besides the
// connection's, which kafkaconn reads. They are the plugin's (its
// ConfigSpec parses them); the plugin keeps its constants unexported, so
// they are repeated here and TestConfigFieldsExist checks them against the
// spec.
const (
	fieldSeedBrokers   = "seed_brokers" // named in messages only: kafkaconn reads it
	fieldTopics        = "topics"
	fieldRegexpTopics  = "regexp_topics"
	fieldConsumerGroup = "consumer_group"
	fieldShareGroup    = "share_group"
	// kafka_share's dead_letter block: its topic and report_for.
	fieldDeadLetter          = "dead_letter"
	fieldDeadLetterTopic     = "topic"
	fieldDeadLetterReportFor = "report_for"
)

// Target is what status connects to and reads: the connection settings of a
// kafka_watermark input and the group whose commits it reports.
//
// A Target is a value, safe for concurrent reads; it holds secrets (SASL
// passwords and tokens), which nothing in this package prints.
type Target struct {
	// Conn is how the input connects, read from its config by
	// kafkaconn.Parse. Without a config it holds the seed brokers and the
	// client ID only: kafkaconn's dialer (10s connect timeout, refused
	// dials retriable) and kgo's defaults do the rest.
	Conn         kafkaconn.Config
	Topics       []string // empty: every partition the group has a commit for
	RegexpTopics bool     // Topics are regular expressions, as the input reads them
	Group        string
	// DeadLetterTopic and DeadLetterReportFor are a kafka_share input's
	// dead_letter.topic, as written (maybe interpolated per message), and
	// dead_letter.report_for: where and how far back `status --share-group`
	// looks for the group's dead letters. "" and 0 otherwise.
	DeadLetterTopic     string
	DeadLetterReportFor time.Duration
}

// Secrets returns the values output must never contain: print nothing
// without Scrub.
func (t Target) Secrets() []string {
	var out []string
	for _, s := range t.Conn.SASL {
		out = append(out, s.Password, s.Token)
	}
	return out
}

// security names the security settings for messages, never a secret:
// " with TLS and SASL SCRAM-SHA-512", or "" for plaintext.
func (t Target) security() string {
	var parts []string
	if t.Conn.TLS != nil {
		parts = append(parts, "TLS")
	}
	for _, s := range t.Conn.SASL {
		if s.Mechanism != kafkaconn.MechanismNone {
			parts = append(parts, "SASL "+s.Mechanism)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " with " + strings.Join(parts, " and ")
}

// validate checks what Collect and the client need, in one place.
func (t Target) validate() error {
	var errs []error
	if len(t.Conn.SeedBrokers) == 0 {
		errs = append(errs, fmt.Errorf("%s: at least one broker address is required (--seed-brokers, or -c with a kafka_watermark input)", fieldSeedBrokers))
	}
	if t.Group == "" {
		errs = append(errs, fmt.Errorf("%s: a group name is required (--consumer-group, or -c with a kafka_watermark input)", fieldConsumerGroup))
	}
	errs = append(errs, kafkaconn.ValidateSASL(t.Conn.SASL)...) // as the input checks them
	return errors.Join(errs...)
}

// validateConn is validate without the group: what Connect needs.
func (t Target) validateConn() error {
	t.Group = "-"
	return t.validate()
}

// Input is a config's kafka_watermark input as LoadInput found it.
//
// An Input is a value, safe for concurrent reads; like Target it holds
// secrets, in Target and in Fields.
type Input struct {
	Target Target
	// Fields are the input's fields as the config holds them, environment
	// variables interpolated, neither defaulted nor parsed: for commands
	// that need a field status does not read (dead-letter reads
	// dead_letter.topic, and whether it is interpolated per message).
	Fields map[string]any
	Where  string // "<file>: <path in the config> (line N)", to start messages with
}

// LoadConfig reads the kafka_watermark input of the Benthos config file at
// path as `run` would: environment variables interpolated in the text first
// (see interpolate; lookup is os.LookupEnv in the binary), then the YAML
// walked with env's component specs, so that the input is found wherever it
// sits (input, or under a broker's inputs, ...), linted with its own spec
// (an unknown field or a bad mechanism is an error, as in `run`), and parsed
// by it (defaults, TLS files). The config must hold exactly one
// kafka_watermark input. env nil is the global environment, which in the
// binary holds every component `run` knows.
//
// No error carries a secret: interpolation errors name variables, lints name
// fields.
func LoadConfig(path string, lookup func(string) (string, bool), env *service.Environment) (Target, error) {
	in, err := LoadInput(path, lookup, env)
	return in.Target, err
}

// LoadInput is LoadConfig, returning the input's raw fields and where it
// sits besides the Target.
func LoadInput(path string, lookup func(string) (string, bool), env *service.Environment) (Input, error) {
	return loadInput(path, lookup, env, plugin.InputName)
}

// LoadShareInput is LoadInput for the config's kafka_share input: its
// connection and its share_group as Target.Group.
func LoadShareInput(path string, lookup func(string) (string, bool), env *service.Environment) (Input, error) {
	return loadInput(path, lookup, env, plugin.ShareInputName)
}

// loadInput is LoadInput of the input called name (plugin.InputName or
// plugin.ShareInputName).
func loadInput(path string, lookup func(string) (string, bool), env *service.Environment, name string) (Input, error) {
	if env == nil {
		env = service.GlobalEnvironment()
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Input{}, err
	}
	text, err := interpolate(raw, lookup)
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", path, err)
	}

	type found struct {
		path string
		line int
		conf any
	}
	var inputs []found
	walker := env.FullConfigSchema("", "").NewStreamConfigWalker()
	err = walker.WalkComponentsYAML(text, func(w *service.WalkedComponent) error {
		if w.ComponentType != "input" || w.Name != name {
			return nil
		}
		v, err := w.ConfigAny()
		if err != nil {
			return err
		}
		inputs = append(inputs, found{w.Path, w.LineStart, v})
		return nil
	})
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", path, err)
	}
	switch len(inputs) {
	case 0:
		return Input{}, fmt.Errorf("%s: no %s input in the config", path, name)
	case 1:
	default:
		var where []string
		for _, in := range inputs {
			where = append(where, fmt.Sprintf("%s (line %d)", in.path, in.line))
		}
		return Input{}, fmt.Errorf("%s: %d %s inputs (%s): one is read: give it a config with one, or --seed-brokers (and the command's other flags) without -c",
			path, len(inputs), name, strings.Join(where, ", "))
	}
	in := inputs[0]
	where := fmt.Sprintf("%s: %s (line %d)", path, in.path, in.line)

	// The walked value is the component's map: its type key and a label.
	// JSON is YAML, so it is handed back to Benthos as JSON.
	component, ok := in.conf.(map[string]any)
	if !ok {
		return Input{}, fmt.Errorf("%s: the %s input is not an object", where, name)
	}
	fields, err := json.Marshal(component[name])
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", where, err)
	}
	if err := lintInput(env, component); err != nil {
		return Input{}, fmt.Errorf("%s: %w", where, err)
	}
	spec, fromParsed := plugin.ConfigSpec(), targetFromParsed
	if name == plugin.ShareInputName {
		spec, fromParsed = plugin.ShareConfigSpec(), shareTargetFromParsed
	}
	pc, err := spec.ParseYAML(string(fields), env)
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", where, err)
	}
	t, err := fromParsed(pc)
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", where, err)
	}
	rawFields, _ := component[name].(map[string]any) // nil for an input with no fields
	return Input{Target: t, Fields: rawFields, Where: where}, nil
}

// lintInput lints the input with Benthos's linter and the input's spec. The
// text is already interpolated: the linter's own interpolation sees no
// variable (a literal ${NAME} left by an escape reads as empty, to the
// linter only).
func lintInput(env *service.Environment, component map[string]any) error {
	b, err := json.Marshal(component)
	if err != nil {
		return err
	}
	linter := env.NewComponentConfigLinter().
		SetSkipEnvVarCheck(true).
		SetEnvVarLookupFunc(func(context.Context, string) (string, bool) { return "", false })
	lints, err := linter.LintYAML("input", b)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range lints {
		errs = append(errs, errors.New(l.What))
	}
	return errors.Join(errs...)
}

// targetFromParsed reads the fields status needs from a parsed
// kafka_watermark config: the connection's with the input's own code
// (kafkaconn.Parse: seed_brokers, client_id, tls, sasl, the tcp block and
// the request timeouts), then the group and its topics.
func targetFromParsed(pc *service.ParsedConfig) (Target, error) {
	var t Target
	var errs []error
	var err error
	t.Conn, err = kafkaconn.Parse(pc)
	errs = append(errs, err)
	t.Topics, err = pc.FieldStringList(fieldTopics)
	errs = append(errs, err)
	t.RegexpTopics, err = pc.FieldBool(fieldRegexpTopics)
	errs = append(errs, err)
	t.Group, err = pc.FieldString(fieldConsumerGroup)
	errs = append(errs, err)
	return t, errors.Join(errs...)
}

// shareTargetFromParsed is targetFromParsed for a parsed kafka_share
// config: the connection's fields, its topics, share_group as Group, and
// its dead_letter topic and report_for.
func shareTargetFromParsed(pc *service.ParsedConfig) (Target, error) {
	var t Target
	var errs []error
	var err error
	t.Conn, err = kafkaconn.Parse(pc)
	errs = append(errs, err)
	t.Topics, err = pc.FieldStringList(fieldTopics)
	errs = append(errs, err)
	t.Group, err = pc.FieldString(fieldShareGroup)
	errs = append(errs, err)
	t.DeadLetterTopic, err = pc.FieldString(fieldDeadLetter, fieldDeadLetterTopic)
	errs = append(errs, err)
	t.DeadLetterReportFor, err = pc.FieldDuration(fieldDeadLetter, fieldDeadLetterReportFor)
	errs = append(errs, err)
	return t, errors.Join(errs...)
}

// splitList splits comma-separated entries and drops empty ones.
func splitList(entries ...string) []string {
	var out []string
	for _, e := range entries {
		for _, s := range strings.Split(e, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
