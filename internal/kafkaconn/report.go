package kafkaconn

import "time"

// How often a connection problem of one broker address is reported again,
// so that one that lasts is neither silent nor a line per try: the first
// report at once (or when the problem is first seen), the next after
// ReportFirst, each next interval twice the last, up to ReportMax. The
// input's reports of failed dials (plugin/connlog.go) and of silent brokers
// (Silence) both keep to it.
const (
	ReportFirst = 5 * time.Second
	ReportMax   = 5 * time.Minute
)

// NextReport is the interval to the next report after one of last; 0 is
// the one before the first interval.
func NextReport(last time.Duration) time.Duration {
	return min(max(2*last, ReportFirst), ReportMax)
}
