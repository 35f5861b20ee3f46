//! Sessions as JSON Lines (SPEC §9): `to_jsonl` / `parse_jsonl`, an exact round trip (values, field order,
//! and the text itself, numbers written as JS writes them), and a clear error for every kind of bad line.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

use proptest::prelude::*;
use serde_json::{json, Value};
use tiny_pi::*;

/// JSON Lines as JS writes them: `messages.map((m) => JSON.stringify(m)).join("\n") + "\n"`, with every
/// message's own fields in SPEC §1's order (as tiny-pi hands them out), provider fields after them, and
/// numbers of every kind JS writes: integer and fractional timestamps, tiny costs, big counts.
const FROM_JS: &str = concat!(
    r#"{"role":"user","content":"read README.md","timestamp":1700000000000,"tag":{"kept":true}}"#,
    "\n",
    r#"{"role":"assistant","content":[{"type":"thinking","thinking":"look first","thinkingSignature":"sig"},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md","limit":0.5}}],"stopReason":"toolUse","timestamp":1700000000000.5,"api":"openai-completions","provider":"openai","model":"gpt-4o-mini","usage":{"input":1200,"output":35,"cacheRead":0,"cost":{"input":0.000003,"output":0.0000015,"total":0.0000045}},"responseId":"r1"}"#,
    "\n",
    r##"{"role":"toolResult","toolCallId":"call_1","toolName":"read","content":[{"type":"text","text":"# tiny-pi"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"details":{"bytes":9,"ratio":3e-7,"huge":1e+21,"big":12345678901234567000,"neg":-1e-7,"max":1.7976931348623157e+308},"isError":false,"timestamp":1700000000001}"##,
    "\n",
    r#"{"role":"notification","text":"build finished","level":2}"#,
    "\n",
    r#"{"role":"assistant","content":[{"type":"text","text":"项目名是 tiny-pi。\n\"quoted\" \u0001"}],"stopReason":"error","errorMessage":"overloaded","timestamp":-1700000000000.25}"#,
    "\n",
);

#[test]
fn jsonl_written_by_js_reads_and_writes_back_byte_for_byte() {
    let messages = parse_jsonl_with_roles(FROM_JS, &["notification"]).expect("reads");
    assert_eq!(
        messages.iter().map(AgentMessage::role).collect::<Vec<_>>(),
        [
            "user",
            "assistant",
            "toolResult",
            "notification",
            "assistant"
        ]
    );
    let AgentMessage::Assistant(second) = &messages[1] else {
        panic!("an assistant message")
    };
    assert_eq!(second.timestamp, 1_700_000_000_000.5);
    assert_eq!(second.extra["usage"]["cost"]["input"], json!(0.000003));
    assert_eq!(to_jsonl(&messages), FROM_JS);
}

#[test]
fn a_byte_order_mark_before_the_first_line_is_no_part_of_its_json() {
    let with_mark = format!("\u{feff}{FROM_JS}");
    let messages = parse_jsonl_with_roles(&with_mark, &["notification"]).expect("reads");
    assert_eq!(
        to_jsonl(&messages),
        FROM_JS,
        "read as without it, written without it"
    );
    let (line, first) = jsonl_lines(&with_mark).next().unwrap();
    assert_eq!((line, first), (1, FROM_JS.lines().next().unwrap()));
    let inside = format!("{}\n\u{feff}{}", &FROM_JS.lines().next().unwrap(), "{}");
    let error = parse_jsonl_with_roles(&inside, &["notification"]).unwrap_err();
    assert_eq!(error.line, 2, "a mark anywhere else is not JSON");
}

#[test]
fn written_messages_read_back_as_the_same_values_in_the_same_field_order() {
    let messages = parse_jsonl_with_roles(FROM_JS, &["notification"]).unwrap();
    let text = to_jsonl(&messages);
    let again = parse_jsonl_with_roles(&text, &["notification"]).unwrap();
    assert_eq!(again, messages);
    // Field order, object by object (the `Value` of each keeps its keys in order).
    for (line, message) in text.lines().zip(&messages) {
        let read: Value = serde_json::from_str(line).unwrap();
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&read), keys(&serde_json::to_value(message).unwrap()));
    }
    let usage: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(
        usage["usage"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["input", "output", "cacheRead", "cost"]
    );
}

#[test]
fn timestamps_are_written_as_js_writes_them() {
    // What `JSON.stringify` writes for each (checked against Node), and each is read back exactly.
    let cases: &[(f64, &str)] = &[
        (1_700_000_000_000.0, "1700000000000"),
        (1_700_000_000_000.5, "1700000000000.5"),
        (1_700_000_000_000.125, "1700000000000.125"),
        (0.000003, "0.000003"),
        (0.0000003, "3e-7"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123.456, "123.456"),
        (-0.5, "-0.5"),
        (-1e-7, "-1e-7"),
        (0.1, "0.1"),
        (100.0, "100"),
        (1e16, "10000000000000000"),
        (12345678901234567890.0, "12345678901234567000"),
        (9007199254740994.0, "9007199254740994"),
        (0.000001234, "0.000001234"),
        (1.5e-6, "0.0000015"),
        (-1_700_000_000_000.25, "-1700000000000.25"),
        (4.35, "4.35"),
        (1.0 / 3.0, "0.3333333333333333"),
        (0.0, "0"),
        (-0.0, "0"),
        (5e-324, "5e-324"),
        (f64::MAX, "1.7976931348623157e+308"),
        (123456789012345680000.0, "123456789012345680000"),
        (0.1 + 0.2, "0.30000000000000004"),
        (3e-6 * 1226.0, "0.0036780000000000003"),
    ];
    for &(timestamp, js) in cases {
        let text = to_jsonl(&[AgentMessage::user("hi", timestamp)]);
        assert_eq!(
            text,
            format!("{{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":{js}}}\n"),
            "{timestamp:e}"
        );
        let back = parse_jsonl(&text).unwrap();
        assert_eq!(back, [AgentMessage::user("hi", timestamp)], "{js}");
        assert_eq!(to_jsonl(&back), text);
    }
}

/// The number `to_jsonl` wrote for a user message's timestamp.
fn timestamp_text(text: &str) -> &str {
    let start = text.find("\"timestamp\":").unwrap() + "\"timestamp\":".len();
    &text[start..text.len() - 2]
}

proptest! {
    /// Any finite number is written in JS's form, and the text is that very number (read exactly, by
    /// Rust's own reader and by `parse_jsonl`).
    #[test]
    fn any_number_is_written_as_itself_in_js_form(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        prop_assume!(x.is_finite());
        let text = to_jsonl(&[AgentMessage::user("t", x)]);
        let number = timestamp_text(&text);
        let read: f64 = number.parse().unwrap();
        prop_assert_eq!(read, x, "{}", number);
        let back = parse_jsonl(&text).unwrap();
        let AgentMessage::User(user) = &back[0] else { unreachable!() };
        prop_assert_eq!(user.timestamp, x, "{}", number);
        prop_assert_eq!(to_jsonl(&back), text.clone());
        // JS's layout: no trailing zero after a point, a signed exponent exactly outside [1e-6, 1e21).
        let (mantissa, exponent) = number.split_once('e').unwrap_or((number, ""));
        prop_assert!(!(mantissa.contains('.') && mantissa.ends_with('0')), "{}", number);
        let scientific = x != 0.0 && (x.abs() >= 1e21 || x.abs() < 1e-6);
        prop_assert_eq!(!exponent.is_empty(), scientific, "{}", number);
        prop_assert!(exponent.is_empty() || exponent.starts_with(['+', '-']), "{}", number);
    }

    /// Numbers as apps write them (integers up to 2^53, up to 15 significant digits below 10^19) come back
    /// exactly, and so does their text.
    #[test]
    fn numbers_as_apps_write_them_round_trip_exactly(
        digits in 0u64..1_000_000_000_000_000,
        scale in -22i32..=3,
        integer in -(1i64 << 53)..=(1i64 << 53),
        negative in any::<bool>(),
    ) {
        let decimal: f64 = format!("{}{digits}e{scale}", if negative { "-" } else { "" }).parse().unwrap();
        for x in [decimal, integer as f64] {
            let text = to_jsonl(&[AgentMessage::user("t", x)]);
            let back = parse_jsonl(&text).unwrap();
            let AgentMessage::User(user) = &back[0] else { unreachable!() };
            prop_assert_eq!(user.timestamp, x, "{}", timestamp_text(&text));
            prop_assert_eq!(to_jsonl(&back), text);
        }
    }
}

#[test]
fn no_messages_is_no_text_and_blank_lines_are_skipped_but_counted() {
    assert_eq!(to_jsonl(&[]), "");
    assert_eq!(parse_jsonl("").unwrap(), []);
    assert_eq!(parse_jsonl("\n\n  \n").unwrap(), []);
    let line = r#"{"role":"user","content":"hi","timestamp":1}"#;
    // No trailing newline, blank lines, a CRLF file: the same message.
    let numbered: Vec<(usize, &str)> = jsonl_lines("a\n\n  \nb\r\n").collect();
    assert_eq!(numbered, [(1, "a"), (4, "b\r")]);
    for text in [
        line.to_string(),
        format!("\n{line}\n\n"),
        format!("{line}\r\n"),
    ] {
        assert_eq!(parse_jsonl(&text).unwrap(), [AgentMessage::user("hi", 1.0)]);
    }
    let error = parse_jsonl(&format!("{line}\n\n   \n{{\"role\": 3}}\n")).unwrap_err();
    assert_eq!(error.line, 4, "{error}");
}

/// The error for one bad line after two good ones: its line number and message.
fn bad_line(line: &str) -> String {
    let good = r#"{"role":"user","content":"hi","timestamp":1}"#;
    let text = format!("{good}\n{good}\n{line}\n{good}\n");
    let error = parse_jsonl(&text).unwrap_err();
    assert_eq!(error.line, 3, "{error}");
    error.to_string()
}

#[test]
fn every_kind_of_bad_line_names_its_line_and_the_field() {
    let cases: &[(&str, &str)] = &[
        // not JSON
        (
            r#"{"role":"user","#,
            "line 3: not valid JSON: EOF while parsing",
        ),
        (
            "hello",
            "line 3: not valid JSON: expected value at column 1",
        ),
        (
            r#"{"role":"user"} trailing"#,
            "line 3: not valid JSON: trailing characters",
        ),
        // JSON, not a message object
        ("[1, 2]", "line 3: message must be an object (got array)"),
        ("\"hi\"", "line 3: message must be an object (got string)"),
        ("null", "line 3: message must be an object (got null)"),
        ("42", "line 3: message must be an object (got integer)"),
        // the role
        (r#"{"content":"hi"}"#, "line 3: message.role is missing"),
        (
            r#"{"role":7,"content":"hi"}"#,
            "line 3: message.role must be a string (got integer)",
        ),
        (
            r#"{"role":"system","content":"hi"}"#,
            "line 3: message.role must be one of \"user\", \"assistant\", \"toolResult\", \"compaction\" (got \"system\")",
        ),
        // a user message
        (
            r#"{"role":"user"}"#,
            "line 3: message.content is missing",
        ),
        (
            r#"{"role":"user","content":5}"#,
            "line 3: message.content must be a string or an array (got integer)",
        ),
        (
            r#"{"role":"user","content":[{"type":"video"}]}"#,
            "line 3: message.content[0].type must be one of \"text\", \"image\" (got \"video\")",
        ),
        (
            r#"{"role":"user","content":"hi","timestamp":"now"}"#,
            "line 3: message.timestamp must be a number (got string)",
        ),
        (
            r#"{"role":"user","content":"hi","timestamp":null}"#,
            "line 3: message.timestamp must be a number (got null)",
        ),
        (
            r#"{"role":"user","content":"hi"}"#,
            "line 3: message.timestamp is missing",
        ),
        // an assistant message
        (
            r#"{"role":"assistant","content":[]}"#,
            "line 3: message.stopReason is missing",
        ),
        (
            r#"{"role":"assistant","content":[],"stopReason":"done"}"#,
            "line 3: message.stopReason must be one of \"stop\", \"length\", \"toolUse\", \"error\", \"aborted\" (got \"done\")",
        ),
        (
            r#"{"role":"assistant","content":[{"type":"toolCall","id":3,"name":"read"}],"stopReason":"toolUse"}"#,
            "line 3: message.content[0].id must be a string (got integer)",
        ),
        (
            r#"{"role":"assistant","content":[{"type":"text"}],"stopReason":"stop"}"#,
            "line 3: message.content[0].text is missing",
        ),
        // a tool result
        (
            r#"{"role":"toolResult","toolCallId":"a","toolName":"read","content":[]}"#,
            "line 3: message.isError is missing",
        ),
        (
            r#"{"role":"toolResult","toolCallId":"a","toolName":"read","content":"text","isError":false}"#,
            "line 3: message.content must be an array (got string)",
        ),
        (
            r#"{"role":"toolResult","toolCallId":"a","toolName":"read","content":[{"type":"image","data":"x"}],"isError":false}"#,
            "line 3: message.content[0].mimeType is missing",
        ),
    ];
    for (line, expected) in cases {
        let error = bad_line(line);
        assert!(
            error.starts_with(expected),
            "{line}\n  gave:     {error}\n  expected: {expected}…"
        );
    }
}

#[test]
fn a_custom_role_reads_only_when_listed() {
    let note = r#"{"role":"notification","text":"build finished"}"#;
    assert_eq!(
        bad_line(note),
        "line 3: message.role must be one of \"user\", \"assistant\", \"toolResult\", \"compaction\" (got \"notification\")"
    );
    let messages = parse_jsonl_with_roles(note, &["notification"]).unwrap();
    let AgentMessage::Custom(custom) = &messages[0] else {
        panic!("a custom message")
    };
    assert_eq!(custom.fields["text"], "build finished");
    assert_eq!(to_jsonl(&messages), format!("{note}\n"));
}

#[test]
fn a_paused_transcript_survives_the_trip() {
    let mut call = AssistantMessage::new(
        vec![AssistantBlock::tool_call(
            "c1",
            "delete",
            json!({"path": "a.txt"}),
        )],
        StopReason::ToolUse,
    );
    call.timestamp = 2.0;
    let paused = vec![
        AgentMessage::user("clean up", 1.0),
        AgentMessage::Assistant(call),
    ];
    let back = parse_jsonl(&to_jsonl(&paused)).unwrap();
    assert_eq!(back, paused);
    let view = validate_transcript_with(
        &back,
        ValidateOptions {
            allow_pending: true,
        },
    );
    assert!(view.ok);
    assert_eq!(
        view.pending,
        [Unanswered {
            tool_call_id: "c1".into(),
            index: 1
        }]
    );
}

#[test]
fn only_numbers_are_rewritten_never_text_that_looks_like_one() {
    let mut message = AgentMessage::user("1.0 and 2e5 \"3.50\" \\\" 4.0", 2.0);
    if let AgentMessage::User(user) = &mut message {
        user.extra.insert("1.5".into(), json!(2.0));
        user.extra.insert("s".into(), json!("4.0\\"));
        user.extra
            .insert("n".into(), json!([1.0, -0.0, 2.5e-8, 7, -3, {"x": 1e300}]));
    }
    let text = to_jsonl(std::slice::from_ref(&message));
    assert_eq!(
        text,
        concat!(
            r#"{"role":"user","content":"1.0 and 2e5 \"3.50\" \\\" 4.0","timestamp":2,"#,
            r#""1.5":2,"s":"4.0\\","n":[1,0,2.5e-8,7,-3,{"x":1e+300}]}"#,
            "\n"
        )
    );
    let back = parse_jsonl(&text).unwrap();
    assert_eq!(to_jsonl(&back), text);
}
