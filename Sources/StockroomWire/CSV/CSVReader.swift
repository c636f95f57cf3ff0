/// An RFC 4180 reader fed bytes as they arrive (a request body's chunks), handing out each record
/// once it is complete: memory holds one record, not the file. Quoted fields may hold commas,
/// doubled quotes and line breaks; records end with CRLF or LF; a UTF-8 byte order mark at the very
/// start is skipped. Each record comes with the line of the file it starts on (1 = the first; a
/// line break inside a quoted field counts). A blank line is a record of one empty field.
///
/// The listed CSV packages read a whole string (SwiftCSV) or pull from a blocking `InputStream`
/// (yaslab/CSV.swift); a request body is pushed in chunks by an async sequence, hence this.
public struct CSVReader: Sendable {
    /// Why the bytes are not a CSV file the import reads.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public enum Reason: Hashable, Sendable {
            /// A record longer than `maxRecordBytes`.
            case recordTooLong(limit: Int)
            /// A quote inside an unquoted field, or a character after a closing quote.
            case strayQuote
            /// The file ends inside a quoted field (a file cut short).
            case unterminatedQuote
            /// Bytes that are not UTF-8.
            case notUTF8
        }

        /// The line the record starts on.
        public let line: Int
        public let reason: Reason

        public init(line: Int, reason: Reason) {
            self.line = line
            self.reason = reason
        }

        public var description: String {
            switch reason {
            case .recordTooLong(let limit): "line \(line): a record longer than \(limit) bytes"
            case .strayQuote: "line \(line): a quote inside an unquoted field, or text after a closing quote"
            case .unterminatedQuote: "line \(line): the file ends inside a quoted field"
            case .notUTF8: "line \(line): not UTF-8"
            }
        }
    }

    /// A complete record and the line it starts on.
    public struct Record: Hashable, Sendable {
        public var line: Int
        public var fields: [String]
    }

    private enum State: Sendable {
        case fieldStart, unquoted, quoted, quoteInQuoted, afterCR
    }

    /// The longest record accepted, in bytes.
    public let maxRecordBytes: Int
    private var state = State.fieldStart
    private var field: [UInt8] = []
    private var fields: [String] = []
    private var recordBytes = 0
    private var recordLine = 1
    private var line = 1
    private var started = false
    private var bomChecked = 0
    private var pendingBOM: [UInt8] = []

    public init(maxRecordBytes: Int = 1 << 20) {
        self.maxRecordBytes = maxRecordBytes
    }

    /// Reads `bytes`, calling `record` for each record completed by them.
    public mutating func feed(_ bytes: some Sequence<UInt8>, record: (Record) throws -> Void) throws {
        for byte in bytes {
            // The byte order mark, EF BB BF, only at the very start.
            if bomChecked < 3 {
                let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
                if byte == mark[bomChecked] {
                    pendingBOM.append(byte)
                    bomChecked += 1
                    continue
                }
                bomChecked = 3
                let held = pendingBOM
                pendingBOM = []
                for earlier in held { try take(earlier, record: record) }
            }
            try take(byte, record: record)
        }
    }

    /// Ends the input: the last record, if it has no line break after it; `unterminatedQuote`
    /// when the file ends inside a quoted field.
    public mutating func finish(record: (Record) throws -> Void) throws {
        if bomChecked < 3 {
            bomChecked = 3
            let held = pendingBOM
            pendingBOM = []
            for earlier in held { try take(earlier, record: record) }
        }
        switch state {
        case .quoted: throw Failure(line: recordLine, reason: .unterminatedQuote)
        // A CR ended the last record already; a field start with nothing in its record is no record.
        case .afterCR: return
        case .fieldStart where !started: return
        default: try endRecord(record)
        }
    }

    private mutating func take(_ byte: UInt8, record: (Record) throws -> Void) throws {
        if state == .afterCR {
            state = .fieldStart
            started = false
            // CRLF is one line break; a CR alone ended its line too.
            if byte == lf {
                line += 1
                return
            }
            line += 1
        }
        if !started {
            started = true
            recordLine = line
            recordBytes = 0
        }
        recordBytes += 1
        guard recordBytes <= maxRecordBytes else { throw Failure(line: recordLine, reason: .recordTooLong(limit: maxRecordBytes)) }
        if byte == lf { line += 1 }
        switch state {
        case .fieldStart, .unquoted:
            switch byte {
            case quote where state == .fieldStart:
                state = .quoted
            case quote:
                throw Failure(line: recordLine, reason: .strayQuote)
            default:
                if try !endsField(byte, record: record) {
                    field.append(byte)
                    state = .unquoted
                }
            }
        case .quoted:
            if byte == quote { state = .quoteInQuoted } else { field.append(byte) }
        case .quoteInQuoted:
            switch byte {
            case quote:
                field.append(quote)
                state = .quoted
            default:
                guard try endsField(byte, record: record) else { throw Failure(line: recordLine, reason: .strayQuote) }
            }
        case .afterCR:
            break
        }
    }

    /// After an unquoted field or a closing quote: a comma ends the field, a CR or an LF the
    /// record (true); anything else is the caller's (false).
    private mutating func endsField(_ byte: UInt8, record: (Record) throws -> Void) throws -> Bool {
        switch byte {
        case comma:
            try endField()
            state = .fieldStart
        case cr:
            try endRecord(record)
            state = .afterCR
        case lf:
            try endRecord(record)
            state = .fieldStart
            started = false
        default:
            return false
        }
        return true
    }

    private mutating func endField() throws {
        guard let text = String(validating: field, as: UTF8.self) else { throw Failure(line: recordLine, reason: .notUTF8) }
        fields.append(text)
        field.removeAll(keepingCapacity: true)
    }

    private mutating func endRecord(_ record: (Record) throws -> Void) throws {
        try endField()
        let done = Record(line: recordLine, fields: fields)
        fields = []
        try record(done)
    }

    private let quote = UInt8(ascii: "\"")
    private let comma = UInt8(ascii: ",")
    private let cr = UInt8(ascii: "\r")
    private let lf = UInt8(ascii: "\n")
}
