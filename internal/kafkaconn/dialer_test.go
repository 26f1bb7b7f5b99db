package kafkaconn

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/testcert"
)

// kgo refuses a Dialer together with DialTLSConfig, so with TLS and a tcp
// dialer the TLS handshake is dialled here, over that dialer, with the
// broker's host as the server name, as DialTLSConfig would: a TLS listener
// sees it.
func TestTLSDialServerName(t *testing.T) {
	cl, err := kgo.NewClient(Config{
		SeedBrokers: []string{"127.0.0.1:1"},
		TLS:         &tls.Config{},
		Dialer:      &net.Dialer{Timeout: 5 * time.Second},
	}.Opts()...)
	require.NoError(t, err, "kgo accepts the options")
	cl.Close()

	// The handshake runs over the tcp dialer with the broker's host as the
	// server name: a TLS listener sees it.
	cert := testcert.New(t)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
	require.NoError(t, err)
	defer l.Close()
	names := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		tc := conn.(*tls.Conn)
		if tc.Handshake() == nil {
			names <- tc.ConnectionState().ServerName
		}
	}()
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tlsDial(dialer, &tls.Config{RootCAs: cert.Pool(t)})(t.Context(), "tcp", net.JoinHostPort("localhost", port))
	require.NoError(t, err, "the certificate is for localhost: the server name came from the address")
	conn.Close()
	require.Equal(t, "localhost", <-names)
}
