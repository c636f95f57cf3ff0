/// An alert or confirmation dialog as data (swift-navigation's `AlertState`): its title, message
/// and buttons are part of the navigation state, so every device restores the same alert.
public struct AlertState: Hashable, Sendable {
    /// The title.
    public var title: TextState
    /// The message under the title, if any.
    public var message: TextState?
    /// The buttons, in the order a client shows them.
    public var buttons: [ButtonState]

    /// Creates an alert.
    public init(title: TextState, message: TextState?, buttons: [ButtonState]) {
        self.title = title
        self.message = message
        self.buttons = buttons
    }

    /// The commands the buttons send: while the alert is open, these (and `cancel` and the
    /// commands that open another destination) are the only ones accepted.
    public var commands: [Command] { buttons.map(\.command) }
}

/// One button of an alert (swift-navigation's `ButtonState`): its label, role and the command it sends.
public struct ButtonState: Hashable, Sendable {
    /// What a button is for, as a client styles it.
    public enum Role: String, Hashable, Sendable, CaseIterable {
        /// Dismisses without acting (the default for Escape or a tap outside).
        case cancel
        /// Destroys something: an item, or a draft's typed text.
        case destructive
    }

    /// The label.
    public var label: TextState
    /// The role, if any.
    public var role: Role?
    /// The command a tap sends.
    public var command: Command

    /// Creates a button.
    public init(label: TextState, role: Role?, command: Command) {
        self.label = label
        self.role = role
        self.command = command
    }
}

extension AlertState {
    /// The alert `openDeleteAlert` opens; `name` is the item's name (nil when not known).
    public static func deleteItem(name: String?) -> AlertState {
        AlertState(
            title: name.map { TextState(key: "deleteItem.title", args: [$0], text: "Delete \u{201C}\($0)\u{201D}?") }
                ?? TextState(key: "deleteItem.titleUnnamed", text: "Delete this item?"),
            message: TextState(key: "deleteItem.message", text: "This cannot be undone."),
            buttons: [
                ButtonState(label: TextState(key: "deleteItem.confirm", text: "Delete"), role: .destructive, command: .confirmDelete),
                ButtonState(label: TextState(key: "common.cancel", text: "Cancel"), role: .cancel, command: .cancel),
            ]
        )
    }

    /// The alert of a save that found the item changed (`current` is the item now) or deleted
    /// (`current` nil); `name` is the name the user knows the item by.
    public static func conflict(name: String, current: Item?) -> AlertState {
        guard current != nil else {
            return AlertState(
                title: TextState(key: "conflict.deleted.title", text: "Item deleted on another device"),
                message: TextState(
                    key: "conflict.deleted.message", args: [name],
                    text: "\u{201C}\(name)\u{201D} was deleted while you were editing it. Your edit is kept until you choose."),
                buttons: [
                    ButtonState(
                        label: TextState(key: "conflict.saveAsNew", text: "Save as a new item"), role: nil,
                        command: .resolveConflict(keep: .mine)),
                    ButtonState(
                        label: TextState(key: "conflict.discardMine", text: "Discard my edit"), role: .destructive,
                        command: .resolveConflict(keep: .theirs)),
                ]
            )
        }
        return AlertState(
            title: TextState(key: "conflict.changed.title", text: "Item changed on another device"),
            message: TextState(
                key: "conflict.changed.message", args: [name],
                text: "\u{201C}\(name)\u{201D} was changed while you were editing it. Your edit is kept until you choose."),
            buttons: [
                ButtonState(
                    label: TextState(key: "conflict.keepMine", text: "Keep my edit"), role: nil,
                    command: .resolveConflict(keep: .mine)),
                ButtonState(
                    label: TextState(key: "conflict.takeTheirs", text: "Take theirs"), role: .destructive,
                    command: .resolveConflict(keep: .theirs)),
                ButtonState(
                    label: TextState(key: "conflict.review", text: "Review"), role: .cancel,
                    command: .resolveConflict(keep: .review)),
            ]
        )
    }
}
