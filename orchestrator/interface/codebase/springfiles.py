"""The modules a Spring Boot service has besides its endpoints: its service interface, security
configuration, token checks and, when it owns tables, the seed data it writes at startup (pure)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, pascal, snake, upper
from orchestrator.interface.codebase.parts import named_endpoints
from orchestrator.interface.codebase.scaffold import quote, table_words

if TYPE_CHECKING:
    from orchestrator.interface.codebase.spring import JavaSpring


def spring_extras(syn: JavaSpring) -> list[Module]:
    return [_interface(syn), _security(syn), _jwt(syn), *_seed(syn)]


def _module(syn: JavaSpring, path: str, role: str, head: list[str], members: list[Member]) -> Module:
    return Module(f"src/main/java/{syn.package_path}/{path}", role, "", head, members, ["}"], 1, syn.unit)


def _interface(syn: JavaSpring) -> Module:
    package = syn.package_path.replace("/", ".")
    members = [
        Member(
            syn.method(n.verb_words),
            [f"Response<Object> {syn.method(n.verb_words)}({syn.handler(n)[1]});"],
            callable=False,
        )
        for n in named_endpoints(syn.facts)
    ]
    head = [
        f"package {package}.service;",
        "",
        "import org.springframework.http.HttpHeaders;",
        "",
        f"public interface {pascal([*syn.names.stem, 'service'])} {{",
    ]
    return _module(syn, f"service/{pascal([*syn.names.stem, 'service'])}.java", "core", head, members)


def _security(syn: JavaSpring) -> Module:
    pad, package = syn.pad, syn.package_path.replace("/", ".")
    matchers = [
        f"{pad * 2}.requestMatchers(HttpMethod.{n.endpoint.op.verb}, "
        f'"{_pattern(n.endpoint.op.subject)}").permitAll()'
        for n in named_endpoints(syn.facts)
    ]
    head = [
        f"package {package}.config;",
        "",
        *[
            f"import {name};"
            for name in (
                f"{package}.security.jwt.JWTFilter",
                f"{package}.security.jwt.JWTProvider",
                "org.springframework.beans.factory.annotation.Autowired",
                "org.springframework.context.annotation.Bean",
                "org.springframework.context.annotation.Configuration",
                "org.springframework.http.HttpMethod",
                "org.springframework.security.config.annotation.web.builders.HttpSecurity",
                "org.springframework.security.config.http.SessionCreationPolicy",
                "org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder",
                "org.springframework.security.crypto.password.PasswordEncoder",
                "org.springframework.security.web.SecurityFilterChain",
                "org.springframework.security.web.authentication.UsernamePasswordAuthenticationFilter",
            )
        ],
        "",
        "@Configuration",
        "public class SecurityConfig {",
        "",
        f"{pad}@Autowired",
        f"{pad}private JWTProvider jwtProvider;",
    ]
    members = [
        Member(
            "passwordEncoder",
            ["@Bean", "public PasswordEncoder passwordEncoder() {"],
            [["return new BCryptPasswordEncoder();"]],
            ["}"],
            rank=0,
        ),
        Member(
            "filterChain",
            ["@Bean", "public SecurityFilterChain filterChain(HttpSecurity http) throws Exception {"],
            [
                [
                    "http.csrf(csrf -> csrf.disable())",
                    f"{pad * 2}.sessionManagement(s -> "
                    "s.sessionCreationPolicy(SessionCreationPolicy.STATELESS))",
                    f"{pad * 2}.authorizeHttpRequests(auth -> auth",
                    *[pad + m for m in matchers],
                    f"{pad * 3}.anyRequest().authenticated())",
                    f"{pad * 2}.addFilterBefore(new JWTFilter(jwtProvider), "
                    "UsernamePasswordAuthenticationFilter.class);",
                ],
                ["return http.build();"],
            ],
            ["}"],
            topic=("security", "filter"),
            rank=0,
        ),
    ]
    return _module(syn, "config/SecurityConfig.java", "security", head, members)


def _jwt(syn: JavaSpring) -> Module:
    pad, package = syn.pad, syn.package_path.replace("/", ".")
    head = [
        f"package {package}.security.jwt;",
        "",
        *[
            f"import {name};"
            for name in (
                "io.jsonwebtoken.Claims",
                "io.jsonwebtoken.Jws",
                "io.jsonwebtoken.JwtException",
                "io.jsonwebtoken.Jwts",
                "java.util.Base64",
                "javax.annotation.PostConstruct",
                "javax.servlet.http.HttpServletRequest",
                "org.springframework.beans.factory.annotation.Value",
                "org.springframework.stereotype.Component",
            )
        ],
        "",
        "@Component",
        "public class JWTProvider {",
        "",
    ]
    members = [
        Member(
            "secretKey",
            ['@Value("${security.jwt.token.secret-key:secret}")', "private String secretKey;"],
            callable=False,
            gap=False,
        ),
        Member(
            "validityInMilliseconds",
            ["private long validityInMilliseconds = 3600000;"],
            callable=False,
            gap=False,
        ),
        Member(
            "init",
            ["@PostConstruct", "protected void init() {"],
            [["secretKey = Base64.getEncoder().encodeToString(secretKey.getBytes());"]],
            ["}"],
            rank=0,
        ),
        Member(
            "resolveToken",
            ["public String resolveToken(HttpServletRequest req) {"],
            [
                [
                    'String bearerToken = req.getHeader("Authorization");',
                    'if (bearerToken != null && bearerToken.startsWith("Bearer ")) {',
                    f"{pad}return bearerToken.substring(7);",
                    "}",
                ],
                ["return null;"],
            ],
            ["}"],
            topic=("token",),
        ),
        Member(
            "validateToken",
            ["public boolean validateToken(String token) {"],
            [
                [
                    "try {",
                    f"{pad}Jws<Claims> claims = "
                    "Jwts.parser().setSigningKey(secretKey).parseClaimsJws(token);",
                    f"{pad}return !claims.getBody().getExpiration().before(new java.util.Date());",
                    "} catch (JwtException | IllegalArgumentException e) {",
                    f"{pad}return false;",
                    "}",
                ]
            ],
            ["}"],
            topic=("token", "validate"),
        ),
    ]
    return _module(syn, "security/jwt/JWTProvider.java", "security", head, members)


def _seed(syn: JavaSpring) -> list[Module]:
    tables = [d for d in syn.facts.dependencies if d.protocol == "sql"]
    if not tables:
        return []
    pad, package = syn.pad, syn.package_path.replace("/", ".")
    repository = pascal(syn.dep_words(tables[0]))
    entity = pascal(table_words(tables[0]))
    head = [
        f"package {package}.init;",
        "",
        f"import {package}.repository.{repository};",
        "import org.springframework.beans.factory.annotation.Autowired;",
        "import org.springframework.boot.CommandLineRunner;",
        "import org.springframework.stereotype.Component;",
        "import org.slf4j.Logger;",
        "import org.slf4j.LoggerFactory;",
        "",
        "@Component",
        "public class InitData implements CommandLineRunner {",
        "",
        f"{pad}private static final Logger LOGGER = LoggerFactory.getLogger(InitData.class);",
        f"{pad}private static final String {upper(table_words(tables[0]))}_SOURCE "
        f'= "{snake(table_words(tables[0]))}.csv";',
        "",
        f"{pad}@Autowired",
        f"{pad}private {repository} repository;",
    ]
    body = [
        [
            "if (repository.count() > 0) {",
            f'{pad}LOGGER.info("[InitData] {entity} rows present, nothing to seed");',
            f"{pad}return;",
            "}",
        ],
        [
            f"for ({entity} row : {entity}.readAll({upper(table_words(tables[0]))}_SOURCE)) {{",
            f"{pad}repository.save(row);",
            "}",
        ],
        [f'LOGGER.info("[InitData] seeded {{}} {camel(table_words(tables[0]))} rows", repository.count());'],
    ]
    members = [
        Member(
            "run",
            ["@Override", "public void run(String... args) throws Exception {"],
            body,
            ["}"],
            topic=("init", "seed", *table_words(tables[0])),
            rank=0,
        )
    ]
    return [_module(syn, "init/InitData.java", "seed", head, members)]


def _pattern(path: str) -> str:
    parts = ["*" if part.startswith("{") else part for part in path.split("/")]
    return quote("/".join(parts)).strip('"')
