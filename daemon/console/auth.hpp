// Console users and their sessions.
//
// Credentials file: one user per line, "name role hash", '#' starts a comment. role is viewer
// (may look) or admin (may also act); hash is "pbkdf2-sha256$ITERATIONS$SALT$KEY" (hex), made
// by `once-console --hash-secret` from a password or a token read on stdin. The file must not
// be readable by other users. Sessions live in memory: a random 256-bit id in an HttpOnly,
// SameSite=Strict cookie, and a random per-session CSRF token that every form carries.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace once::console {

enum class Role { viewer, admin };
const char* role_name(Role r);

struct User {
    std::string name;
    Role role = Role::viewer;
    std::string hash;
};

// Reads and checks the file. Throws std::runtime_error naming the file and line.
std::map<std::string, User> load_credentials(const std::string& path);

// "pbkdf2-sha256$iterations$salt$key" for a new random salt.
std::string hash_secret(const std::string& secret, int iterations = 200000);
// Constant-time comparison against a stored hash; false for a malformed hash.
bool verify_secret(const std::string& secret, const std::string& stored);
bool constant_time_equal(const std::string& a, const std::string& b);

// 32 random bytes as 64 hex digits (session ids, CSRF tokens).
std::string random_token();

struct Session {
    std::string user;
    Role role = Role::viewer;
    std::string csrf;
    std::chrono::steady_clock::time_point expires;
    std::string flash;   // one message shown on the next page (an action's outcome)
};

class Sessions {
public:
    explicit Sessions(std::chrono::milliseconds ttl) : ttl_(ttl) {}
    std::string create(const std::string& user, Role role);   // returns the session id
    std::optional<Session> find(const std::string& id);       // a live session, or none
    void set_flash(const std::string& id, std::string msg);
    std::string take_flash(const std::string& id);
    void erase(const std::string& id);

private:
    std::chrono::milliseconds ttl_;
    std::mutex mu_;
    std::map<std::string, Session> sessions_;
};

}  // namespace once::console
