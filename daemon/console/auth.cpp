#include "auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace once::console {

const char* role_name(Role r) { return r == Role::admin ? "admin" : "viewer"; }

namespace {

std::string to_hex(const unsigned char* p, size_t n) {
    static const char* d = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < n; ++i) { out.push_back(d[p[i] >> 4]); out.push_back(d[p[i] & 15]); }
    return out;
}

bool from_hex(const std::string& s, std::vector<unsigned char>& out) {
    if (s.size() % 2) return false;
    out.clear();
    for (size_t i = 0; i < s.size(); i += 2) {
        auto v = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                   : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
        int hi = v(s[i]), lo = v(s[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out.push_back(static_cast<unsigned char>(hi * 16 + lo));
    }
    return true;
}

std::vector<unsigned char> pbkdf2(const std::string& secret, const std::vector<unsigned char>& salt, int iterations) {
    std::vector<unsigned char> key(32);
    if (PKCS5_PBKDF2_HMAC(secret.data(), static_cast<int>(secret.size()), salt.data(), static_cast<int>(salt.size()),
                          iterations, EVP_sha256(), static_cast<int>(key.size()), key.data()) != 1)
        throw std::runtime_error("PBKDF2 failed");
    return key;
}

}  // namespace

std::string random_token() {
    unsigned char b[32];
    if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("no random bytes (RAND_bytes failed)");
    return to_hex(b, sizeof b);
}

bool constant_time_equal(const std::string& a, const std::string& b) {
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string hash_secret(const std::string& secret, int iterations) {
    unsigned char salt[16];
    if (RAND_bytes(salt, sizeof salt) != 1) throw std::runtime_error("no random bytes (RAND_bytes failed)");
    std::vector<unsigned char> s(salt, salt + sizeof salt);
    auto key = pbkdf2(secret, s, iterations);
    return "pbkdf2-sha256$" + std::to_string(iterations) + "$" + to_hex(salt, sizeof salt) + "$" + to_hex(key.data(), key.size());
}

bool verify_secret(const std::string& secret, const std::string& stored) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(stored);
    while (std::getline(in, part, '$')) parts.push_back(part);
    if (parts.size() != 4 || parts[0] != "pbkdf2-sha256") return false;
    int iterations = 0;
    try { iterations = std::stoi(parts[1]); } catch (...) { return false; }
    if (iterations < 1000 || iterations > 10000000) return false;
    std::vector<unsigned char> salt, want;
    if (!from_hex(parts[2], salt) || !from_hex(parts[3], want) || want.size() != 32) return false;
    auto got = pbkdf2(secret, salt, iterations);
    return CRYPTO_memcmp(got.data(), want.data(), 32) == 0;
}

std::map<std::string, User> load_credentials(const std::string& path) {
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot read credentials file \"" + path + "\"");
    if (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP))
        throw std::runtime_error("credentials file \"" + path + "\" is readable or writable by others "
                                 "(chmod 0640 or 0600 it)");
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read credentials file \"" + path + "\"");
    std::map<std::string, User> users;
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        auto hash_pos = line.find('#');
        if (hash_pos != std::string::npos) line.erase(hash_pos);
        std::istringstream words(line);
        User u;
        std::string role, extra;
        if (!(words >> u.name)) continue;
        auto where = "credentials file \"" + path + "\" line " + std::to_string(n) + ": ";
        if (!(words >> role >> u.hash) || (words >> extra))
            throw std::runtime_error(where + "expected \"name role hash\"");
        if (role == "admin") u.role = Role::admin;
        else if (role == "viewer") u.role = Role::viewer;
        else throw std::runtime_error(where + "role \"" + role + "\": use viewer or admin");
        if (u.name.size() > 63) throw std::runtime_error(where + "the name is longer than 63 characters");
        if (u.hash.rfind("pbkdf2-sha256$", 0) != 0)
            throw std::runtime_error(where + "the hash is not pbkdf2-sha256$... (make one with once-console --hash-secret)");
        if (users.count(u.name)) throw std::runtime_error(where + "user \"" + u.name + "\" appears twice");
        users[u.name] = u;
    }
    if (users.empty()) throw std::runtime_error("credentials file \"" + path + "\" has no users");
    return users;
}

std::string Sessions::create(const std::string& user, Role role) {
    std::string id = random_token();
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    for (auto it = sessions_.begin(); it != sessions_.end();)   // drop expired ones
        it = it->second.expires <= now ? sessions_.erase(it) : std::next(it);
    sessions_[id] = Session{user, role, random_token(), now + ttl_, {}};
    return id;
}

std::optional<Session> Sessions::find(const std::string& id) {
    if (id.size() != 64) return std::nullopt;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return std::nullopt;
    if (it->second.expires <= std::chrono::steady_clock::now()) { sessions_.erase(it); return std::nullopt; }
    return it->second;
}

void Sessions::set_flash(const std::string& id, std::string msg) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it != sessions_.end()) it->second.flash = std::move(msg);
}

std::string Sessions::take_flash(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return {};
    return std::exchange(it->second.flash, std::string());
}

void Sessions::erase(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(id);
}

}  // namespace once::console
