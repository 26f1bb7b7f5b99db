package status

import (
	"fmt"
	"os"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/urfave/cli/v2"
)

// Names of the connection flags, which every command that connects as the
// input does shares (status, dead-letter): ConnFlags declares them.
const (
	FlagConfig      = "config"
	FlagSeedBrokers = "seed-brokers"
)

// ConnFlags returns the flags that say how a command connects: -c, a config
// whose kafka_watermark input gives the connection settings (seed brokers,
// client ID, TLS, SASL, the tcp block, the request timeouts), and
// --seed-brokers, which overrides its seed_brokers or, without -c, is all
// there is. Read them with ConnFromFlags.
func ConnFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: FlagConfig, Aliases: []string{"c"}, Usage: "a Benthos config whose kafka_watermark input gives the connection settings"},
		&cli.StringFlag{Name: FlagSeedBrokers, Usage: "comma-separated seed brokers (overrides the config's seed_brokers)"},
	}
}

// Conn is what the connection flags say. A value; Load neither keeps nor
// modifies it.
type Conn struct {
	ConfigPath  string   // a Benthos config with one kafka_watermark input; "" for flags only
	SeedBrokers []string // overrides seed_brokers
	// Share reads the config's kafka_share input instead (LoadShareInput).
	Share bool

	Lookup func(string) (string, bool) // environment lookup; nil is os.LookupEnv
	Env    *service.Environment        // component specs for the config; nil is the global environment
}

// ConnFromFlags reads the flags ConnFlags declares.
func ConnFromFlags(c *cli.Context) Conn {
	return Conn{ConfigPath: c.String(FlagConfig), SeedBrokers: splitList(c.String(FlagSeedBrokers))}
}

// Load returns the input to connect as: the config's (LoadInput) when
// ConfigPath is set, else one with the client ID watermark-connect and no
// fields; then SeedBrokers, when set, replace its seed brokers. It connects
// nowhere: Connect and NewClient do, and check what they need.
func (c Conn) Load() (Input, error) {
	if c.Lookup == nil {
		c.Lookup = os.LookupEnv
	}
	var in Input
	if c.ConfigPath != "" {
		var err error
		load := LoadInput
		if c.Share {
			load = LoadShareInput
		}
		if in, err = load(c.ConfigPath, c.Lookup, c.Env); err != nil {
			return Input{}, err
		}
	} else {
		in.Target.Conn.ClientID = "watermark-connect"
	}
	if len(c.SeedBrokers) > 0 {
		in.Target.Conn.SeedBrokers = c.SeedBrokers
	}
	return in, nil
}

// Scrub replaces every secret (Target.Secrets) of four bytes or more in s.
// Shorter ones are left: replacing every "a" would garble the output and
// protect nothing.
func Scrub(s string, secrets []string) string {
	for _, secret := range secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, scrubbed)
		}
	}
	return s
}

// unexpectedArgs is the message of a command given arguments: the config
// comes with -c.
func unexpectedArgs(command string, args []string) string {
	return fmt.Sprintf("%s: unexpected arguments %v: the config is given with -c\n", command, args)
}
