package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The input's loss reports, as the members print them: one ERROR line per
// loss event. Kafka took records away before the input delivered them
// (retention or DeleteRecords moved the log start past them), or an unclean
// leader election truncated the log under records it had delivered:
//
//	kafka_watermark: lost <count> record offset(s) of <topic>/<partition> before delivery: offsets <first>-<last> are no longer in the log, which now starts at <logstart> (cause: <cause>)
//	kafka_watermark: log of <topic>/<partition> truncated at offset <divergence> by an unclean leader election: <count> delivered record offset(s) from <divergence> to <last> are no longer in the log and are delivered again from the new log (cause: truncation)
//
// <count> of a loss is the offsets of first..last never delivered: it may
// be less than last-first+1. The checker reads these lines from outside the
// binary and compares them with what the harness itself deleted
// (losscheck.go).

// Loss causes the input names.
const (
	causeRetention  = "retention"
	causeTruncation = "truncation"
	causeUnknown    = "unknown"
)

// lossEvent is one loss line of a member's log.
type lossEvent struct {
	Instance  string `json:"instance"` // the member process that printed it
	Level     string `json:"level"`    // as the logger wrote it ("error"), "" when the line carries none
	Truncated bool   `json:"truncated"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Count     int64  `json:"count"`
	// A loss: first..last and the log start. A truncation: first is the
	// divergence, last the old position minus one, LogStart unused (-1).
	First    int64  `json:"first"`
	Last     int64  `json:"last"`
	LogStart int64  `json:"log_start"`
	Cause    string `json:"cause"`
}

func (e lossEvent) String() string {
	if e.Truncated {
		return fmt.Sprintf("%s: %s/%d truncated at %d, %d delivered offset(s) to %d", e.Instance, e.Topic, e.Partition, e.First, e.Count, e.Last)
	}
	return fmt.Sprintf("%s: %s/%d lost %d offset(s) in %d-%d, log start %d (%s)", e.Instance, e.Topic, e.Partition, e.Count, e.First, e.Last, e.LogStart, e.Cause)
}

// A Kafka topic name is [A-Za-z0-9._-]+, so the last '/' before the
// partition is the separator.
var (
	lostLineRe  = regexp.MustCompile(`^kafka_watermark: lost (\d+) record offset\(s\) of ([A-Za-z0-9._-]+)/(\d+) before delivery: offsets (\d+)-(\d+) are no longer in the log, which now starts at (\d+) \(cause: (retention|truncation|unknown)\)$`)
	truncLineRe = regexp.MustCompile(`^kafka_watermark: log of ([A-Za-z0-9._-]+)/(\d+) truncated at offset (\d+) by an unclean leader election: (\d+) delivered record offset\(s\) from (\d+) to (\d+) are no longer in the log and are delivered again from the new log \(cause: truncation\)$`)
)

// Prefixes that make a message a loss report; one that then does not parse
// is a format the checker does not know, which it reports rather than skip.
const (
	lostPrefix  = "kafka_watermark: lost "
	lostMarker  = " record offset(s) of "
	truncPrefix = "kafka_watermark: log of "
	truncMarker = " by an unclean leader election"
)

// parseLossLine reads one line of a member's log. ok is false for a line
// that is no loss report; err is set for one that looks like a report (its
// words) but is not in the form above. The line may be logfmt (Benthos's
// default: msg="..."), JSON ("msg" or "message") or the bare message.
func parseLossLine(line string) (ev lossEvent, ok bool, err error) {
	if !strings.Contains(line, "kafka_watermark: ") {
		return ev, false, nil
	}
	msg, level := logMessage(line)
	isLost := strings.HasPrefix(msg, lostPrefix) && strings.Contains(msg, lostMarker)
	isTrunc := strings.HasPrefix(msg, truncPrefix) && strings.Contains(msg, truncMarker)
	if !isLost && !isTrunc {
		return ev, false, nil
	}
	ev = lossEvent{Level: level, LogStart: -1}
	num := func(s string) int64 {
		n, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("loss line: %q is not a number: %w", s, perr)
		}
		return n
	}
	if isLost {
		m := lostLineRe.FindStringSubmatch(msg)
		if m == nil {
			return ev, true, fmt.Errorf("a loss line in an unknown form: %q", msg)
		}
		ev.Count, ev.Topic, ev.Partition = num(m[1]), m[2], int32(num(m[3]))
		ev.First, ev.Last, ev.LogStart, ev.Cause = num(m[4]), num(m[5]), num(m[6]), m[7]
	} else {
		m := truncLineRe.FindStringSubmatch(msg)
		if m == nil {
			return ev, true, fmt.Errorf("a truncation line in an unknown form: %q", msg)
		}
		ev.Truncated, ev.Cause = true, causeTruncation
		ev.Topic, ev.Partition, ev.First, ev.Count = m[1], int32(num(m[2])), num(m[3]), num(m[4])
		if from := num(m[5]); from != ev.First && err == nil {
			err = fmt.Errorf("a truncation line at offset %d counts from %d: %q", ev.First, from, msg)
		}
		ev.Last = num(m[6])
	}
	if err != nil {
		return ev, true, err
	}
	switch {
	case ev.Last < ev.First:
		err = fmt.Errorf("a loss line with offsets %d-%d, the last before the first: %q", ev.First, ev.Last, msg)
	case ev.Count < 0 || (!ev.Truncated && (ev.Count == 0 || ev.Count > ev.Last-ev.First+1)):
		err = fmt.Errorf("a loss line counting %d offset(s) in %d-%d: %q", ev.Count, ev.First, ev.Last, msg)
	case !ev.Truncated && ev.LogStart <= ev.Last && ev.Cause == causeRetention:
		err = fmt.Errorf("a retention loss of offsets %d-%d with the log starting at %d, not past them: %q", ev.First, ev.Last, ev.LogStart, msg)
	}
	return ev, true, err
}

// logMessage is the message of a log line and its level: logfmt's msg="..."
// and level=..., a JSON object's "msg"/"message" and "level", or the line
// itself from "kafka_watermark: " on.
func logMessage(line string) (msg, level string) {
	if t := strings.TrimSpace(line); strings.HasPrefix(t, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(t), &m) == nil {
			level, _ = m["level"].(string)
			for _, k := range []string{"msg", "message"} {
				if s, ok := m[k].(string); ok {
					return s, level
				}
			}
		}
	}
	if v, ok := logfmtValue(line, "level"); ok {
		level = v
	}
	if v, ok := logfmtValue(line, "msg"); ok {
		return v, level
	}
	i := strings.Index(line, "kafka_watermark: ")
	return strings.TrimRight(line[i:], "\r\n"), level
}

// logfmtValue is the value of key in a logfmt line (logrus's text format:
// key=value, the value quoted as Go quotes it when it has spaces or quotes).
func logfmtValue(line, key string) (string, bool) {
	for i := 0; i < len(line); {
		j := strings.Index(line[i:], key+"=")
		if j < 0 {
			return "", false
		}
		at := i + j
		rest := line[at+len(key)+1:]
		if at > 0 && line[at-1] != ' ' {
			i = at + len(key) + 1 // inside another key or value
			continue
		}
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return "", false
			}
			v, err := strconv.Unquote(q)
			return v, err == nil
		}
		if k := strings.IndexByte(rest, ' '); k >= 0 {
			rest = rest[:k]
		}
		return rest, true
	}
	return "", false
}
