package status

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// ExitUsage is the exit status of a usage error, for every command of the
// binary: an unknown flag, a flag value that does not parse, an argument
// or a subcommand that does not exist. It is status's "cannot tell" (2),
// never 1, which status gives only for a stalled partition: a probe with a
// typo in its command line reads unready, not stalled.
const ExitUsage = ExitUnknown

// OnUsageError is the commands' cli.OnUsageErrorFunc: it prints err on
// stderr, naming the command, the flag, the value and the form expected
// when the flag parses one, and exits with ExitUsage. urfave/cli's own
// handling prints "Incorrect Usage" and the whole help on stdout and
// returns the error, which the Benthos CLI turns into exit status 1.
func OnUsageError(c *cli.Context, err error, _ bool) error {
	fmt.Fprintf(c.App.ErrWriter, "%s: %s (see --help)\n", commandPath(c), usageMessage(c.Command, err))
	return cli.Exit("", ExitUsage)
}

// flagValueErr is how the standard flag package (under urfave/cli) words a
// value that does not parse: invalid value "5" for flag -timeout: parse error.
var flagValueErr = regexp.MustCompile(`^invalid value "(.*)" for flag -(\S+): (.*)$`)

// flagUnknownErr is how it words a flag it does not know.
var flagUnknownErr = regexp.MustCompile(`^flag provided but not defined: -+(\S+)$`)

// commandPath is the command as the user typed it: "watermark-connect
// dead-letter redrive" for a subcommand.
func commandPath(c *cli.Context) string {
	var names []string
	for _, l := range c.Lineage() {
		if l.Command != nil && l.Command.Name != "" {
			names = append(names, l.Command.Name)
		}
	}
	slices.Reverse(names)
	return strings.Join(names, " ")
}

// usageMessage rewords err for the flags of cmd: a value that does not
// parse gets the flag's name as the user types it and the form it takes.
func usageMessage(cmd *cli.Command, err error) string {
	if m := flagUnknownErr.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("no flag --%s", m[1])
	}
	m := flagValueErr.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	value, name := m[1], m[2]
	var form string
	for _, f := range cmd.Flags {
		if !hasName(f, name) {
			continue
		}
		switch f.(type) {
		case *cli.DurationFlag:
			form = `a duration with its unit, e.g. "5s", "2s", "250ms" or "1m30s"`
		case *cli.IntFlag, *cli.Int64Flag:
			form = "a whole number"
		case *cli.UintFlag, *cli.Uint64Flag:
			form = "a whole number, 0 or more"
		case *cli.BoolFlag:
			form = "true or false"
		}
	}
	if form == "" {
		return fmt.Sprintf("--%s %q: %s", name, value, m[3])
	}
	return fmt.Sprintf("--%s %q is not %s", name, value, form)
}

func hasName(f cli.Flag, name string) bool {
	for _, n := range f.Names() {
		if n == name {
			return true
		}
	}
	return false
}

// UnknownSubcommand is the Action of a command that only groups
// subcommands: with no argument it shows the command's help, with one that
// names no subcommand it says so and exits with ExitUsage (urfave/cli's
// default answers "No help topic" with status 3, status's "lost").
func UnknownSubcommand(c *cli.Context) error {
	if !c.Args().Present() {
		return cli.ShowSubcommandHelp(c)
	}
	var names []string
	for _, s := range c.Command.Subcommands {
		if s.Name != "help" {
			names = append(names, s.Name)
		}
	}
	fmt.Fprintf(c.App.ErrWriter, "%s: no subcommand %q: use one of %s (see --help)\n", commandPath(c), c.Args().First(), strings.Join(names, ", "))
	return cli.Exit("", ExitUsage)
}
