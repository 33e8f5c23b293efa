import MentorAPI
import MentorCore

/// `settings.show` and `settings.set` over the registry (`Settings.swift`), on the node's queue.
/// Both need the account unlocked, like every method that reads or writes what is the user's
/// own (a locked or logged-out account gets `locked`, one with no account `noAccount`).
extension Node {
    func settingsShow(_ caller: Requester) throws -> SettingsResult {
        let account = try unlockedAccount(caller)
        var stored = try replica.accountSettings(of: account)
        // The address given at signup is the account's e-mail until it is changed here.
        if stored["email"] == nil { stored["email"] = try replica.nodeAccount(uid: caller.uid)?.email }
        return SettingsResult(settings: settingsRegistry.settings.map { $0.info(stored: stored[$0.key]) })
    }

    /// Checks the key and the value before anything is written; the hook's error puts the old
    /// value back.
    func settingsSet(_ request: SettingsSetRequest, _ caller: Requester) throws -> SettingInfo {
        let account = try unlockedAccount(caller)
        let setting = try settingsRegistry.named(request.key)
        let value: String? = switch request.value {
        case .unset: nil
        case .set(let text): try setting.validate(text)
        }
        let before = try replica.accountSettings(of: account)[setting.key]
        // The default is not stored: a key set back to it reads as the default from then on.
        let stored = value == setting.defaultValue ? nil : value
        try replica.setAccountSetting(account, key: setting.key, value: stored)
        if let didSet = setting.didSet {
            let change = SettingChange(uid: caller.uid, account: account, key: setting.key,
                                       old: setting.effective(stored: before).value, new: setting.effective(stored: stored).value)
            do {
                try didSet(self, change)
            } catch {
                try replica.setAccountSetting(account, key: setting.key, value: before)
                throw error
            }
        }
        logger.info("setting changed", ["uid": "\(caller.uid)", "key": setting.key])
        return setting.info(stored: stored)
    }

    /// The value of `key` in effect for the account of `uid` (its default when none was set);
    /// for code that acts on a setting.
    func settingValue(_ key: String, uid: UInt32) throws -> String? {
        let setting = try settingsRegistry.named(key)
        guard let account = try replica.nodeAccount(uid: uid)?.account else { return setting.defaultValue }
        return setting.effective(stored: try replica.accountSettings(of: account)[setting.key]).value
    }

    /// The caller's account key when it is unlocked here; else the error other methods give.
    func unlockedAccount(_ caller: Requester) throws -> PublicKey {
        guard let writer = writers[caller.uid] else { throw try lockedError(caller.uid) }
        return writer.account
    }
}
