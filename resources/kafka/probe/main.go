// Command probe checks that a Kafka broker answers a Metadata request, optionally over
// TLS + SASL/SCRAM, and can create topics. broker.sh uses it as its readiness check;
// tests and humans can use it to create topics on the test broker:
//
//	go run ./resources/kafka/probe -brokers 127.0.0.1:19092 -create-topics orders:3,events
//	go run ./resources/kafka/probe -brokers 127.0.0.1:19094 -tls-ca "$(bash resources/kafka/broker.sh run-dir)/tls/ca.pem" \
//	    -sasl SCRAM-SHA-512 -user wmtest -password wmtest-secret
//
// It retries until -timeout because a starting broker refuses connections for a while.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func main() {
	var (
		brokers  = flag.String("brokers", "127.0.0.1:19092", "comma-separated bootstrap addresses")
		timeout  = flag.Duration("timeout", 15*time.Second, "give up after this long")
		caFile   = flag.String("tls-ca", "", "PEM CA file; enables TLS")
		mech     = flag.String("sasl", "", "SASL mechanism: SCRAM-SHA-256 or SCRAM-SHA-512")
		user     = flag.String("user", "", "SASL user")
		password = flag.String("password", "", "SASL password")
		topics   = flag.String("create-topics", "", "comma-separated name[:partitions] to create (replication factor 1; existing ones are fine)")
		quiet    = flag.Bool("q", false, "print nothing on success")
	)
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	if err := run(ctx, *brokers, *caFile, *mech, *user, *password, *topics, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, brokers, caFile, mech, user, password, topics string, quiet bool) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.DialTimeout(2 * time.Second),
		// Surface errors (refused, bad password, untrusted CA) to our own retry loop below
		// instead of letting the client retry until the deadline and report only that.
		kgo.RequestRetries(1),
		kgo.RetryTimeout(2 * time.Second),
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificate in %s", caFile)
		}
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	switch auth := (scram.Auth{User: user, Pass: password}); strings.ToUpper(mech) {
	case "":
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(auth.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
	default:
		return fmt.Errorf("unsupported -sasl %q", mech)
	}

	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// Metadata first: the client does ApiVersions (and SASL) on connect, so one successful
	// Metadata round trip proves the listener is fully usable.
	var md kadm.Metadata
	for {
		attempt, cancel := context.WithTimeout(ctx, 3*time.Second)
		md, err = adm.BrokerMetadata(attempt)
		cancel()
		if err == nil && len(md.Brokers) > 0 {
			break
		}
		if err == nil {
			err = errors.New("metadata lists no brokers")
		}
		if errors.Is(err, kerr.SaslAuthenticationFailed) {
			return err // retrying cannot fix credentials
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker not ready: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
	if !quiet {
		fmt.Printf("cluster %s, controller %d, brokers %d\n", md.Cluster, md.Controller, len(md.Brokers))
	}

	if topics == "" {
		return nil
	}
	for _, spec := range strings.Split(topics, ",") {
		name, parts, hasParts := strings.Cut(strings.TrimSpace(spec), ":")
		n := int64(1)
		if hasParts {
			if n, err = strconv.ParseInt(parts, 10, 32); err != nil || n < 1 {
				return fmt.Errorf("bad partition count in %q", spec)
			}
		}
		resp, err := adm.CreateTopic(ctx, int32(n), 1, nil, name)
		if err == nil {
			err = resp.Err
		}
		switch {
		case errors.Is(err, kerr.TopicAlreadyExists):
			if !quiet {
				fmt.Printf("topic %s already exists\n", name)
			}
		case err != nil:
			return fmt.Errorf("create topic %s: %w %s", name, err, resp.ErrMessage)
		case !quiet:
			fmt.Printf("topic %s created with %d partitions\n", name, n)
		}
	}
	return nil
}
